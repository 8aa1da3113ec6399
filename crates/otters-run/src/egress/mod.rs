//! Declared egress at run time: what an agent's EGRESS (plus its MODEL provider's API host) lets
//! it reach, and how a run holds it there (`proxy`: the allow-list proxy; `launch`: the internal
//! network, the proxy and the container, and their removal).
//!
//! Takes: a run plan (its `egress`, made by `plan::egress`). Returns: the system executor's
//! refusal, the proxy, the confined launch. Must never: widen the list beyond the plan's.

pub mod launch;
pub mod proxy;

pub use crate::plan::EgressPlan;

/// An agent whose EGRESS the chosen executor cannot hold it to.
#[derive(Debug, thiserror::Error)]
#[error("agent {name} declares EGRESS ({declared}), which the system executor cannot enforce: a process on this host has this host's network; the docker executor confines it")]
pub struct Unenforceable {
    /// The agent's name, escaped.
    pub name: String,
    /// `none`, or the declared destinations.
    pub declared: String,
}

/// Refuses a system-executor run of an agent that declares EGRESS, unless the user accepts that
/// it is not enforced (`unenforced`).
pub fn check_executor(plan: &crate::plan::RunPlan, unenforced: bool) -> Result<(), Unenforceable> {
    let Some(egress) = &plan.egress else {
        return Ok(());
    };
    if unenforced || !matches!(plan.executor, crate::plan::Launcher::System) {
        return Ok(());
    }
    let declared = match egress {
        EgressPlan::NoNetwork => "none".to_owned(),
        EgressPlan::Proxy { declared, .. } => declared.join(", "),
    };
    Err(Unenforceable {
        name: otters_oci::validate::escape_text(&plan.name, 80),
        declared,
    })
}
