//! Where the published schemas live: the `$id` of each, under the repository (Cargo.toml
//! `repository`) and the schema set's version.
//!
//! Takes: a schema name. Returns: its `$id`. Must never: depend on anything but the name.

/// The version of the schema set, the directory of `$id` (`schemas/v1/NAME.json`).
pub const VERSION: &str = "v1";

/// The repository the `$id`s live under (`repository` of Cargo.toml).
pub const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// The `$id` of the schema `name`: `<repository>/raw/main/schemas/v1/NAME.json`.
pub fn id(name: &str) -> String {
    format!("{REPOSITORY}/raw/main/schemas/{VERSION}/{name}.json")
}
