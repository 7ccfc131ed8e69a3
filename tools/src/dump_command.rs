//! `dump [APP]`: walk AT-SPI applications as a client sees them (the
//! walker is newton-atspi-client's) and print their trees.

use newton_atspi_client::dump::{
    applications, select_apps, to_json, to_text, walk_from_reporting, WalkLimits, ROOT,
};
use newton_atspi_daemon::a11y_bus;

use crate::cli::DumpArgs;

/// `dump [APP]`: prints the chosen applications' trees.
pub fn run(args: DumpArgs) -> Result<(), Box<dyn std::error::Error>> {
    async_io::block_on(async {
        let address = match args.a11y_bus.clone().filter(|a| !a.is_empty()) {
            Some(address) => address,
            None => a11y_bus::find_address().await?,
        };
        let conn = a11y_bus::connect(&address).await?;
        let apps = select_apps(applications(&conn).await?, args.app.as_deref())?;
        let limits = WalkLimits {
            max_depth: args.max_depth,
            max_nodes: args.max_nodes,
        };
        let mut trees = Vec::new();
        for (bus, name) in &apps {
            let progress = crate::progress::Progress::new(&format!("dump: {name}"));
            let tree =
                walk_from_reporting(&conn, bus, ROOT, limits, &|n| progress.visited(n)).await;
            progress.finish();
            trees.push(tree);
        }
        let output = if args.json {
            to_json(&trees)?
        } else {
            trees.iter().map(to_text).collect()
        };
        crate::print_out(&output)?;
        Ok(())
    })
}
