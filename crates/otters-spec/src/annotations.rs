//! The openotters annotation and label keys, spelled once: those of a bin image (a RUNTIME or BIN
//! an Agentfile names, spec §f.1), those `otters export` puts on its referrers, and the labels
//! that tie an exported image or a running container to its agent. Readers of a bin image accept
//! the keys older openotters wrote (`vnd.openotters.bin.*`) too: the `*_KEYS` arrays list both
//! spellings in the order they are looked up.

/// The prefix of every bin annotation as otters writes it.
pub const BIN_PREFIX: &str = "io.openotters.bin.";
/// The prefix older openotters wrote bin annotations under; read, never written.
pub const LEGACY_BIN_PREFIX: &str = "vnd.openotters.bin.";

/// The bin's file name inside its image (what makes an image a bin image).
pub const BIN_NAME: &str = "io.openotters.bin.name";
/// The directory the bin lives in inside its image.
pub const BIN_PATH: &str = "io.openotters.bin.path";
/// The path of the bin's usage document inside its image.
pub const BIN_USAGE: &str = "io.openotters.bin.usage";
/// A one-line description of the bin.
pub const BIN_DESCRIPTION: &str = "io.openotters.bin.description";

/// [`BIN_NAME`] as otters and as older openotters write it, in lookup order.
pub const BIN_NAME_KEYS: [&str; 2] = [BIN_NAME, "vnd.openotters.bin.name"];
/// [`BIN_PATH`] as otters and as older openotters write it, in lookup order.
pub const BIN_PATH_KEYS: [&str; 2] = [BIN_PATH, "vnd.openotters.bin.path"];
/// [`BIN_USAGE`] as otters and as older openotters write it, in lookup order.
pub const BIN_USAGE_KEYS: [&str; 2] = [BIN_USAGE, "vnd.openotters.bin.usage"];
/// [`BIN_DESCRIPTION`] as otters and as older openotters write it, in lookup order.
pub const BIN_DESCRIPTION_KEYS: [&str; 2] = [BIN_DESCRIPTION, "vnd.openotters.bin.description"];

/// What kind of export a referrer of an agent is (its value: `runnable`).
pub const EXPORT: &str = "io.openotters.export";
/// The platform of a single-platform export referrer (`os/arch[/variant]`).
pub const EXPORT_PLATFORM: &str = "io.openotters.export.platform";

/// The label (`true`) on an exported image or a running container that says it is an agent; the
/// prefix of every agent label.
pub const AGENT: &str = "io.openotters.agent";
/// The label with the digest of the agent an exported image or a kube object was made from.
pub const AGENT_DIGEST: &str = "io.openotters.agent.digest";
/// The label with an exported agent's declared EGRESS: `host:port` destinations separated by
/// commas, or `none`; absent when the agent declares none (then no LABEL may claim it).
pub const EGRESS: &str = "io.openotters.egress";
/// The label with the id of the agent a container runs.
pub const AGENT_ID: &str = "io.openotters.agent.id";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legacy_keys_are_the_same_names_under_the_legacy_prefix() {
        for (key, keys) in [
            (BIN_NAME, BIN_NAME_KEYS),
            (BIN_PATH, BIN_PATH_KEYS),
            (BIN_USAGE, BIN_USAGE_KEYS),
            (BIN_DESCRIPTION, BIN_DESCRIPTION_KEYS),
        ] {
            let name = key.strip_prefix(BIN_PREFIX).unwrap();
            assert_eq!(keys, [key.to_owned(), format!("{LEGACY_BIN_PREFIX}{name}")]);
        }
        assert!(AGENT_DIGEST.starts_with(AGENT) && AGENT_ID.starts_with(AGENT));
        assert!(EXPORT_PLATFORM.starts_with(EXPORT));
    }
}
