//! Walking a whole tree the way a naive AT does (GetChildren + Name + GetRole + GetState per
//! node) and fetching it in one Cache.GetItems call.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::dbus::{Client, Obj, Query};
use crate::{fail, Result};

/// One walk and one GetItems of one tree.
#[derive(Debug, Default, Serialize)]
pub struct Walk {
    pub nodes_visited: usize,
    pub walk_s: f64,
    pub walk_us_per_node: f64,
    pub walk_errors: usize,
    /// Mean µs per call of each member during the walk (GetChildren, Name, GetRole, GetState).
    pub mean_us_by_member: Vec<(String, f64)>,
    /// Median of the GetItems calls (seconds), `None` when the target has no Cache.
    pub get_items_s: Option<f64>,
    pub get_items_count: usize,
}

use newton_atspi_client::wire::CacheItem;

/// Walks breadth-first from `root`, then times `get_items_runs` GetItems calls.
pub fn walk(client: &Client, root: &Obj, get_items_runs: usize) -> Result<Walk> {
    let mut result = Walk::default();
    let start = Instant::now();
    let mut queue = VecDeque::from([root.clone()]);
    let members = [Query::Name, Query::GetRole, Query::GetState];
    let mut spent = [Duration::ZERO; 4];
    while let Some(obj) = queue.pop_front() {
        result.nodes_visited += 1;
        let call = Instant::now();
        match client.children(&obj) {
            Ok(children) => queue.extend(children.into_iter().filter(|c| !c.is_null())),
            Err(_) => result.walk_errors += 1,
        }
        spent[0] += call.elapsed();
        for (i, query) in members.iter().enumerate() {
            let call = Instant::now();
            if client.query(&obj, *query).is_err() {
                result.walk_errors += 1;
            }
            if let Some(total) = spent.get_mut(i + 1) {
                *total += call.elapsed();
            }
        }
    }
    let visited = result.nodes_visited.max(1) as f64;
    result.mean_us_by_member = ["GetChildren", "Name", "GetRole", "GetState"]
        .iter()
        .zip(spent)
        .map(|(name, total)| (name.to_string(), total.as_secs_f64() * 1e6 / visited))
        .collect();
    result.walk_s = start.elapsed().as_secs_f64();
    result.walk_us_per_node = result.walk_s * 1e6 / result.nodes_visited.max(1) as f64;
    let (time, count) = get_items(client, root, get_items_runs)?;
    result.get_items_s = time.map(|d| d.as_secs_f64());
    result.get_items_count = count;
    Ok(result)
}

/// Median time of `runs` GetItems calls and the number of items; no time when it fails.
fn get_items(client: &Client, root: &Obj, runs: usize) -> Result<(Option<Duration>, usize)> {
    let cache = root.cache()?;
    let mut times = Vec::new();
    let mut count = 0;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let Ok(reply) = client.query(&cache, Query::GetItems) else {
            return Ok((None, 0));
        };
        times.push(start.elapsed());
        let items: Vec<CacheItem> = reply
            .body()
            .deserialize()
            .map_err(|e| fail(format!("GetItems reply of {}: {e}", root.dest)))?;
        count = items.len();
    }
    times.sort();
    Ok((times.get(times.len() / 2).copied(), count))
}
