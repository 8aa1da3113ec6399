//! The `lower` stage: a checked model plus pins becomes an artifact [`Plan`] — config blob,
//! layers in DESIGN §3 order, `agent.yaml`, manifest annotations.
//!
//! Takes: the model, the Agentfile bytes, [`Pins`], an `inputs::Inputs` resolver and
//! [`plan::Options`]. Returns: a [`Plan`] or input diagnostics (AF301–AF303). Must never: do I/O
//! (file sources stay paths for `oci` to stream), read the clock or the environment.

pub mod agent_yaml;
pub mod epoch;
pub(crate) mod inputs;
pub mod pins;
pub mod plan;

pub use pins::{Pin, Pins};
pub use plan::{lower, Layer, LowerError, Plan, Source};
