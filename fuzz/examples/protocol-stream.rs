//! Writes the sender byte stream a `protocol_session` input describes, e.g.
//! to commit a finding as a protocol test input:
//!
//! ```text
//! cargo run --release --example protocol-stream -- crash-file out.bin
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(from), Some(to)) = (args.first(), args.get(1)) else {
        eprintln!("usage: protocol-stream INPUT OUTPUT");
        std::process::exit(2);
    };
    let data = match std::fs::read(from) {
        Ok(data) => data,
        Err(error) => {
            eprintln!("cannot read {from}: {error}");
            std::process::exit(1);
        }
    };
    let stream = newton_cache_fuzz::protocol::stream_of(&data);
    if let Err(error) = std::fs::write(to, &stream) {
        eprintln!("cannot write {to}: {error}");
        std::process::exit(1);
    }
    println!("{} bytes of stream written to {to}", stream.len());
}
