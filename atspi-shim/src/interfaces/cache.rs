//! `org.a11y.atspi.Cache` at `/org/a11y/atspi/cache`: `GetItems` lists the
//! exposed objects' cache items (`model/cache_items.rs`), breadth first
//! within a byte budget.

use crate::model::cache_items::{all_items, CacheItem};
use crate::model::context::AppContext;
use crate::model::error::CallError;
use crate::model::names;
use crate::surface::declare_interface;

declare_interface! {
    pub(crate) static CACHE = names::CACHE, on app {
        fn GetItems() -> (nodes: Vec<CacheItem>) = get_items, heavy;
        property version: u32 = crate::surface::interface_version;
    }
}

fn get_items<'a>(app: &'a AppContext<'a>) -> Result<Vec<CacheItem<'a>>, CallError> {
    Ok(all_items(app))
}
