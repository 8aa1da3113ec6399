//! Media types as a value: the ones otters knows by name, and any other kept as its text.
//!
//! Takes: media-type text (a descriptor's `mediaType`, a `Content-Type`). Returns: [`MediaType`],
//! which compares and branches by kind and gives back exactly the text it was made from. The
//! string constants here (re-exported by the `descriptor` module) stay for writers. Must never: change the text
//! of a media type on its way through (serialised forms are byte-identical to what was read).

use std::fmt;

pub const MANIFEST_V1: &str = "application/vnd.oci.image.manifest.v1+json";
pub const INDEX_V1: &str = "application/vnd.oci.image.index.v1+json";
pub const AGENT_ARTIFACT: &str = "application/vnd.openotters.agent.v1";
pub const AGENT_CONFIG: &str = "application/vnd.openotters.agent.config.v1+json";
pub const AGENTFILE_LAYER: &str = "application/vnd.openotters.agentfile";
pub const CONTEXT_LAYER: &str = "application/vnd.openotters.context.v1";
pub const FILE_LAYER: &str = "application/octet-stream";
pub const TAR_GZIP_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub const AGENT_YAML_LAYER: &str = "application/vnd.openotters.agent.resolved.v1+yaml";
/// The empty JSON blob `{}` an artifact manifest without a config names as its config.
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";

pub const CONFIG_V1: &str = "application/vnd.oci.image.config.v1+json";
pub const TAR_LAYER: &str = "application/vnd.oci.image.layer.v1.tar";
pub const DOCKER_MANIFEST_V2: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
pub const DOCKER_TAR_GZIP_LAYER: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";

/// A media type. Known ones by name; anything else as [`MediaType::Other`] with its text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MediaType {
    /// `application/vnd.oci.image.manifest.v1+json`
    OciManifest,
    /// `application/vnd.oci.image.index.v1+json`
    OciIndex,
    /// `application/vnd.oci.image.config.v1+json`
    OciConfig,
    /// `application/vnd.oci.image.layer.v1.tar`
    OciLayerTar,
    /// `application/vnd.oci.image.layer.v1.tar+gzip`
    OciLayerTarGzip,
    /// `application/vnd.docker.distribution.manifest.v2+json`
    DockerManifest,
    /// `application/vnd.docker.distribution.manifest.list.v2+json`
    DockerManifestList,
    /// `application/vnd.docker.container.image.v1+json`
    DockerConfig,
    /// `application/vnd.docker.image.rootfs.diff.tar.gzip`
    DockerLayerTarGzip,
    /// `application/vnd.openotters.agent.v1` (the artifact type)
    AgentArtifact,
    /// `application/vnd.openotters.agent.config.v1+json`
    AgentConfig,
    /// `application/vnd.openotters.agentfile`
    Agentfile,
    /// `application/vnd.openotters.context.v1`
    Context,
    /// `application/vnd.openotters.agent.resolved.v1+yaml`
    AgentYaml,
    /// `application/octet-stream` (an ADD file)
    OctetStream,
    /// Any other media type, as written.
    Other(String),
}

const KNOWN: [(MediaType, &str); 15] = [
    (MediaType::OciManifest, MANIFEST_V1),
    (MediaType::OciIndex, INDEX_V1),
    (MediaType::OciConfig, CONFIG_V1),
    (MediaType::OciLayerTar, TAR_LAYER),
    (MediaType::OciLayerTarGzip, TAR_GZIP_LAYER),
    (MediaType::DockerManifest, DOCKER_MANIFEST_V2),
    (MediaType::DockerManifestList, DOCKER_MANIFEST_LIST),
    (MediaType::DockerConfig, DOCKER_CONFIG),
    (MediaType::DockerLayerTarGzip, DOCKER_TAR_GZIP_LAYER),
    (MediaType::AgentArtifact, AGENT_ARTIFACT),
    (MediaType::AgentConfig, AGENT_CONFIG),
    (MediaType::Agentfile, AGENTFILE_LAYER),
    (MediaType::Context, CONTEXT_LAYER),
    (MediaType::AgentYaml, AGENT_YAML_LAYER),
    (MediaType::OctetStream, FILE_LAYER),
];

impl MediaType {
    /// The media type `s` names (exact, case-sensitive match; anything else is `Other`).
    pub fn parse(s: &str) -> Self {
        KNOWN
            .iter()
            .find(|(_, text)| *text == s)
            .map_or_else(|| MediaType::Other(s.to_owned()), |(m, _)| m.clone())
    }

    /// The text, exactly as parsed or as the spec spells it.
    pub fn as_str(&self) -> &str {
        match self {
            MediaType::Other(s) => s,
            known => KNOWN
                .iter()
                .find(|(m, _)| m == known)
                .map_or("", |(_, text)| text),
        }
    }

    /// An image index (OCI) or manifest list (Docker).
    pub fn is_index(&self) -> bool {
        matches!(self, MediaType::OciIndex | MediaType::DockerManifestList)
    }

    /// An image manifest (OCI or Docker).
    pub fn is_manifest(&self) -> bool {
        matches!(self, MediaType::OciManifest | MediaType::DockerManifest)
    }

    /// A manifest or an index: a document a graph walk reads for what it names.
    pub fn is_manifest_or_index(&self) -> bool {
        self.is_manifest() || self.is_index()
    }

    /// An image config a runtime image carries (OCI or Docker), whose `os`/`architecture` say
    /// which platform it is for.
    pub fn is_image_config(&self) -> bool {
        matches!(self, MediaType::OciConfig | MediaType::DockerConfig)
    }
}

impl From<&str> for MediaType {
    fn from(s: &str) -> Self {
        Self::parse(s)
    }
}

impl From<String> for MediaType {
    fn from(s: String) -> Self {
        Self::parse(&s)
    }
}

impl From<&MediaType> for MediaType {
    fn from(m: &MediaType) -> Self {
        m.clone()
    }
}

impl From<&String> for MediaType {
    fn from(s: &String) -> Self {
        Self::parse(s)
    }
}

impl PartialEq<str> for MediaType {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for MediaType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for MediaType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A media type's JSON Schema: its text, as the OCI specs write it.
impl schemars::JsonSchema for MediaType {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MediaType".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "A media type, e.g. `application/vnd.oci.image.manifest.v1+json`."
        })
    }
}

impl<'de> serde::Deserialize<'de> for MediaType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_types_parse_by_name_and_give_back_their_text() {
        for (m, text) in &KNOWN {
            assert_eq!(MediaType::parse(text), *m);
            assert_eq!(m.as_str(), *text);
            assert_eq!(m.to_string(), *text);
        }
        assert_eq!(MediaType::parse(INDEX_V1), MediaType::OciIndex);
        assert_eq!(
            MediaType::parse("application/vnd.openotters.context.v1"),
            MediaType::Context
        );
    }

    #[test]
    fn anything_else_is_kept_verbatim() {
        for text in [
            "",
            "application/vnd.oci.image.manifest.v1+JSON",
            " application/vnd.oci.image.index.v1+json",
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
        ] {
            let m = MediaType::parse(text);
            assert_eq!(m, MediaType::Other(text.to_owned()));
            assert_eq!(m.as_str(), text);
        }
    }

    #[test]
    fn kinds() {
        assert!(MediaType::parse(DOCKER_MANIFEST_LIST).is_index());
        assert!(MediaType::OciIndex.is_index());
        assert!(!MediaType::OciManifest.is_index());
        assert!(MediaType::parse(DOCKER_MANIFEST_V2).is_manifest());
        assert!(MediaType::parse(CONFIG_V1).is_image_config());
        assert!(MediaType::parse(DOCKER_CONFIG).is_image_config());
        assert!(!MediaType::AgentConfig.is_image_config());
    }

    #[test]
    fn serde_round_trip_is_the_text() {
        let m: MediaType = serde_json::from_str(r#""application/x-unknown""#).unwrap();
        assert_eq!(m, MediaType::Other("application/x-unknown".into()));
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#""application/x-unknown""#
        );
        assert_eq!(
            serde_json::to_string(&MediaType::AgentYaml).unwrap(),
            format!("{AGENT_YAML_LAYER:?}")
        );
    }
}
