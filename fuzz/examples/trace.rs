//! Replays one JSON-array input commit by commit, printing each outcome (to
//! find which step of a fuzz finding misbehaves).
use newton_cache::{AppReplica, SurfaceId};
fn main() {
    let path = std::env::args().nth(1).expect("usage: trace FILE");
    let updates: Vec<accesskit::TreeUpdate> =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json array");
    let mut app = AppReplica::new(newton_cache_fuzz::fuzz_limits());
    app.create_surface(SurfaceId(1), None).expect("surface");
    for (i, update) in updates.into_iter().enumerate() {
        eprintln!(
            "step {i}: {}",
            serde_json::to_string(&update).unwrap_or_default()
        );
        let result = app.commit(SurfaceId(1), vec![update], 0);
        eprintln!("  -> {:?}", result.as_ref().map(|c| c.kind));
        if result.is_ok() {
            if let Some(tree) = app.surface(SurfaceId(1)).and_then(|s| s.tree()) {
                eprintln!("  querying");
                newton_cache_fuzz::query_everything(tree.state());
            }
        }
    }
}
