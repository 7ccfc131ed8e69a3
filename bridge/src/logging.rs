//! Log set-up: `RUST_LOG` wins over `--log-level`; under systemd (journald
//! sets JOURNAL_STREAM) lines carry no timestamps or colours, which the
//! journal adds itself.

use tracing_subscriber::EnvFilter;

pub fn init(level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let under_journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    if under_journald {
        builder.without_time().with_ansi(false).init();
    } else {
        builder.init();
    }
}
