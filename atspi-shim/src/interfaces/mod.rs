//! Layer 3: one file per AT-SPI interface, each its `declare_interface!`
//! declaration and handlers, built on the model and the surface only. No
//! interface imports another: what two share lives in the model.

pub(crate) mod accessible;
pub(crate) mod action;
pub(crate) mod application;
pub(crate) mod cache;
pub(crate) mod collection;
pub(crate) mod component;
pub(crate) mod document;
pub(crate) mod editable_text;
pub(crate) mod hyperlink;
pub(crate) mod hypertext;
pub(crate) mod image;
pub(crate) mod selection;
pub(crate) mod table;
pub(crate) mod table_cell;
pub(crate) mod text;
pub(crate) mod value;
