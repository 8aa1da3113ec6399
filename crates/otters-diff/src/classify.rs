//! The classified change list between two [`Side`]s (docs/diff.md, "Classes").
//!
//! Takes: the two sides and [`Options`]. Returns: every change, ordered by class, then by what it
//! is about, then by name (deterministic). Must never: call a removal an escalation, or show a
//! CONFIG or ENV value unless asked ([`Options::show_values`]).
use crate::chain::level_name;
use crate::change::{Change, Class, Kind, What};
use crate::side::{Chain, Data, Level, Side};
use crate::text::unified;
use otters_agentfile::ir::{Agent, Bin, Config};
use otters_oci::reference::Reference;
use otters_pipeline::lower::Pins;
use std::collections::{BTreeMap, BTreeSet};

/// How a value hidden by default is shown.
pub const HIDDEN: &str = "(hidden)";

/// What the classifier shows.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Show CONFIG and ENV values (hidden by default: a diff is often posted where the agent's
    /// settings should not be).
    pub show_values: bool,
}

/// The repository an image reference names (`registry/repository`), or the text before its tag
/// or digest when it does not parse.
fn repository(image: &str) -> String {
    if let Ok(r) = Reference::parse(image) {
        return r.name();
    }
    let base = image.split('@').next().unwrap_or(image);
    match base.rsplit_once(':').filter(|(_, t)| !t.contains('/')) {
        Some((r, _)) => r.to_owned(),
        None => base.to_owned(),
    }
}

/// `image@digest` when pinned, else `image`.
fn pinned(image: &str, digest: Option<&otters_oci::Digest>) -> String {
    match digest {
        Some(d) if !image.contains('@') => format!("{image}@{d}"),
        _ => image.to_owned(),
    }
}

/// An image named on both sides (RUNTIME, a BIN, FROM): another repository is an escalation, the
/// same repository with another tag or pin is a re-pin.
fn image_change(
    out: &mut Vec<Change>,
    what: What,
    name: &str,
    (a, a_pin): (&str, Option<&otters_oci::Digest>),
    (b, b_pin): (&str, Option<&otters_oci::Digest>),
) {
    let (before, after) = (pinned(a, a_pin), pinned(b, b_pin));
    if before == after {
        return;
    }
    let class = if repository(a) == repository(b) {
        Class::Pin
    } else {
        Class::Escalation
    };
    out.push(
        Change::new(class, what, name, Kind::Changed)
            .field("image")
            .values(Some(before), Some(after)),
    );
}

fn from(a: &Agent) -> Option<&str> {
    a.from_ref().filter(|f| !f.is_empty() && *f != "scratch")
}

fn node(n: Option<&otters_agentfile::ir::Node<String>>) -> Option<&str> {
    n.map(|n| n.value.as_str())
}

/// The provider of a MODEL (`provider/model`), the text before the first `/`.
fn provider(model: &str) -> &str {
    model.split('/').next().unwrap_or(model)
}

/// A single image item (FROM, RUNTIME): added is an escalation, removed a behaviour change.
fn single_image(
    out: &mut Vec<Change>,
    what: What,
    a: Option<(&str, Option<&otters_oci::Digest>)>,
    b: Option<(&str, Option<&otters_oci::Digest>)>,
) {
    let name = what.as_str();
    match (a, b) {
        (None, None) => {}
        (None, Some((i, d))) => out.push(
            Change::new(Class::Escalation, what, name, Kind::Added)
                .values(None, Some(pinned(i, d))),
        ),
        (Some((i, d)), None) => out.push(
            Change::new(Class::Behaviour, what, name, Kind::Removed)
                .values(Some(pinned(i, d)), None),
        ),
        (Some(x), Some(y)) => image_change(out, what, name, x, y),
    }
}

fn model(out: &mut Vec<Change>, a: Option<&str>, b: Option<&str>) {
    let c = match (a, b) {
        (None, None) => return,
        (None, Some(_)) => Change::new(Class::Escalation, What::Model, "model", Kind::Added),
        (Some(_), None) => Change::new(Class::Behaviour, What::Model, "model", Kind::Removed),
        (Some(x), Some(y)) if x == y => return,
        (Some(x), Some(y)) => {
            let class = if provider(x) == provider(y) {
                Class::Behaviour
            } else {
                Class::Escalation
            };
            Change::new(class, What::Model, "model", Kind::Changed)
        }
    };
    out.push(c.values(a.map(str::to_owned), b.map(str::to_owned)));
}

fn bins(out: &mut Vec<Change>, a: &[Bin], ap: &Pins, b: &[Bin], bp: &Pins) {
    let by_name = |v: &[Bin]| -> BTreeMap<String, Bin> {
        v.iter().map(|x| (x.name.clone(), x.clone())).collect()
    };
    let (a, b) = (by_name(a), by_name(b));
    let pin = |p: &Pins, n: &str| p.bins.get(n).map(|p| p.digest.clone());
    for name in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
        match (a.get(name), b.get(name)) {
            (None, Some(x)) => out.push(
                Change::new(Class::Escalation, What::Bin, name, Kind::Added)
                    .values(None, Some(pinned(&x.image, pin(bp, name).as_ref()))),
            ),
            (Some(x), None) => out.push(
                Change::new(Class::Behaviour, What::Bin, name, Kind::Removed)
                    .values(Some(pinned(&x.image, pin(ap, name).as_ref())), None),
            ),
            (Some(x), Some(y)) => {
                let (pa, pb) = (pin(ap, name), pin(bp, name));
                image_change(
                    out,
                    What::Bin,
                    name,
                    (&x.image, pa.as_ref()),
                    (&y.image, pb.as_ref()),
                );
                if x.description != y.description {
                    out.push(
                        Change::new(Class::Behaviour, What::Bin, name, Kind::Changed)
                            .field("description")
                            .values(x.description.clone(), y.description.clone()),
                    );
                }
                if x.usage != y.usage {
                    let diff = unified(
                        &format!("{name}.usage"),
                        x.usage.as_deref(),
                        y.usage.as_deref(),
                    );
                    out.push(
                        Change::new(Class::Behaviour, What::Bin, name, Kind::Changed)
                            .field("usage")
                            .diff(diff),
                    );
                }
            }
            (None, None) => {}
        }
    }
}

/// Items keyed by name on both sides, each side's value compared whole; `added`, `removed` and
/// `changed` say the class of each.
struct Keyed {
    what: What,
    added: Class,
    removed: Class,
    changed: Class,
    a: BTreeMap<String, String>,
    b: BTreeMap<String, String>,
}

impl Keyed {
    fn configuration(what: What, a: BTreeMap<String, String>, b: BTreeMap<String, String>) -> Self {
        Keyed {
            what,
            added: Class::Configuration,
            removed: Class::Configuration,
            changed: Class::Configuration,
            a,
            b,
        }
    }

    fn push(self, out: &mut Vec<Change>) {
        let names: BTreeSet<&String> = self.a.keys().chain(self.b.keys()).collect();
        for name in names {
            let (x, y) = (self.a.get(name), self.b.get(name));
            let (class, kind) = match (x, y) {
                (None, Some(_)) => (self.added, Kind::Added),
                (Some(_), None) => (self.removed, Kind::Removed),
                (Some(x), Some(y)) if x != y => (self.changed, Kind::Changed),
                _ => continue,
            };
            out.push(Change::new(class, self.what, name, kind).values(x.cloned(), y.cloned()));
        }
    }
}

fn configs(out: &mut Vec<Change>, a: &[Config], b: &[Config], show: bool) {
    let shown = |c: &Config| {
        let value = match &c.value {
            Some(_) if !show => HIDDEN.to_owned(),
            Some(v) => v.display(),
            None => "(unset)".to_owned(),
        };
        if c.required {
            format!("{value} (required)")
        } else {
            value
        }
    };
    let a: BTreeMap<&String, &Config> = a.iter().map(|c| (&c.key, c)).collect();
    let b: BTreeMap<&String, &Config> = b.iter().map(|c| (&c.key, c)).collect();
    for key in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
        let (x, y) = (a.get(key), b.get(key));
        let kind = match (x, y) {
            (None, Some(_)) => Kind::Added,
            (Some(_), None) => Kind::Removed,
            (Some(x), Some(y)) if x.value != y.value || x.required != y.required => Kind::Changed,
            (Some(x), Some(y)) if x.description != y.description => {
                out.push(
                    Change::new(
                        Class::Configuration,
                        What::Config,
                        key.as_str(),
                        Kind::Changed,
                    )
                    .field("description")
                    .values(x.description.clone(), y.description.clone()),
                );
                continue;
            }
            _ => continue,
        };
        out.push(
            Change::new(Class::Configuration, What::Config, key.as_str(), kind)
                .values(x.map(|c| shown(c)), y.map(|c| shown(c))),
        );
    }
}

fn data_text(d: &Data) -> String {
    let kind = if d.directory { "directory, " } else { "" };
    format!("{kind}{} bytes, {}", d.size, d.digest)
}

fn runtime(s: &Side) -> Option<(&str, Option<&otters_oci::Digest>)> {
    node(s.model.agent.runtime.as_ref())
        .filter(|r| !r.is_empty())
        .map(|r| (r, s.pins.runtime.as_ref().map(|p| &p.digest)))
}

fn set(v: &[otters_agentfile::ir::Node<String>]) -> BTreeMap<String, String> {
    v.iter().map(|c| (c.value.clone(), String::new())).collect()
}

fn strings(m: &BTreeMap<String, otters_agentfile::ir::Node<String>>) -> BTreeMap<String, String> {
    m.iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect()
}

fn envs(g: &Agent, show: bool) -> BTreeMap<String, String> {
    g.envs
        .iter()
        .map(|e| {
            let v = if show {
                e.value.clone()
            } else {
                HIDDEN.to_owned()
            };
            (e.key.clone(), v)
        })
        .collect()
}

/// Every change from `a` to `b`, ordered by class, what and name.
pub fn changes(a: &Side, b: &Side, opts: Options) -> Vec<Change> {
    let (x, y) = (&a.model.agent, &b.model.agent);
    let mut out = Vec::new();
    single_image(
        &mut out,
        What::From,
        from(x).map(|f| (f, None)),
        from(y).map(|f| (f, None)),
    );
    single_image(&mut out, What::Runtime, runtime(a), runtime(b));
    model(&mut out, node(x.model.as_ref()), node(y.model.as_ref()));
    bins(&mut out, &x.bins, &a.pins, &y.bins, &b.pins);
    Keyed {
        what: What::Capability,
        added: Class::Escalation,
        removed: Class::Behaviour,
        changed: Class::Behaviour,
        a: set(&x.capabilities),
        b: set(&y.capabilities),
    }
    .push(&mut out);
    mounts(&mut out, x, y);
    crate::egress::changes(&mut out, x, y);
    contexts(&mut out, a, b);
    let exec = |g: &Agent| {
        g.exec
            .as_ref()
            .filter(|e| !e.value.is_empty())
            // As a JSON array: arguments with spaces stay apart.
            .map(|e| serde_json::Value::from(e.value.clone()).to_string())
    };
    if exec(x) != exec(y) {
        let kind = match (exec(x), exec(y)) {
            (None, _) => Kind::Added,
            (_, None) => Kind::Removed,
            _ => Kind::Changed,
        };
        out.push(Change::new(Class::Behaviour, What::Exec, "exec", kind).values(exec(x), exec(y)));
    }
    let name = |g: &Agent| g.name_str().filter(|n| !n.is_empty()).map(str::to_owned);
    if name(x) != name(y) {
        let kind = match (name(x), name(y)) {
            (None, _) => Kind::Added,
            (_, None) => Kind::Removed,
            _ => Kind::Changed,
        };
        out.push(
            Change::new(Class::Configuration, What::Name, "name", kind).values(name(x), name(y)),
        );
    }
    configs(&mut out, &x.configs, &y.configs, opts.show_values);
    let mut env_changes = Vec::new();
    Keyed::configuration(
        What::Env,
        envs(x, opts.show_values),
        envs(y, opts.show_values),
    )
    .push(&mut env_changes);
    // A hidden value that changed still counts: compare the real values.
    let real = |g: &Agent, k: &str| g.envs.iter().find(|e| e.key == k).map(|e| e.value.clone());
    for key in x.envs.iter().map(|e| e.key.as_str()) {
        if !opts.show_values && real(y, key).is_some() && real(x, key) != real(y, key) {
            env_changes.push(
                Change::new(Class::Configuration, What::Env, key, Kind::Changed)
                    .values(Some(HIDDEN.into()), Some(HIDDEN.into())),
            );
        }
    }
    out.extend(env_changes);
    Keyed::configuration(What::Label, strings(&x.labels), strings(&y.labels)).push(&mut out);
    Keyed::configuration(What::Arg, strings(&x.args), strings(&y.args)).push(&mut out);
    data(&mut out, a, b);
    provenance(&mut out, a, b);
    if out.is_empty() && a.manifest != b.manifest {
        out.push(
            Change::new(Class::Provenance, What::Manifest, "manifest", Kind::Changed)
                .values(Some(a.manifest.to_string()), Some(b.manifest.to_string())),
        );
    }
    out.sort_by(|p, q| {
        (p.class, p.what, &p.name, p.field).cmp(&(q.class, q.what, &q.name, q.field))
    });
    out
}

fn mounts(out: &mut Vec<Change>, x: &Agent, y: &Agent) {
    let map = |g: &Agent| -> BTreeMap<String, (bool, Option<String>)> {
        g.mounts
            .iter()
            .map(|m| (m.target.clone(), (m.read_only, m.description.clone())))
            .collect()
    };
    let mode = |ro: bool| if ro { "ro" } else { "rw" }.to_owned();
    let (a, b) = (map(x), map(y));
    for t in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
        match (a.get(t), b.get(t)) {
            (None, Some((ro, _))) => out.push(
                Change::new(Class::Escalation, What::Mount, t, Kind::Added)
                    .values(None, Some(mode(*ro))),
            ),
            (Some((ro, _)), None) => out.push(
                Change::new(Class::Behaviour, What::Mount, t, Kind::Removed)
                    .values(Some(mode(*ro)), None),
            ),
            (Some((ra, da)), Some((rb, db))) => {
                if ra != rb {
                    // ro → rw lets the agent write where it could only read.
                    let class = if *ra {
                        Class::Escalation
                    } else {
                        Class::Behaviour
                    };
                    out.push(
                        Change::new(class, What::Mount, t, Kind::Changed)
                            .field("mode")
                            .values(Some(mode(*ra)), Some(mode(*rb))),
                    );
                }
                if da != db {
                    out.push(
                        Change::new(Class::Configuration, What::Mount, t, Kind::Changed)
                            .field("description")
                            .values(da.clone(), db.clone()),
                    );
                }
            }
            (None, None) => {}
        }
    }
}

fn contexts(out: &mut Vec<Change>, a: &Side, b: &Side) {
    let text = |s: &Side, name: &str| -> Option<String> {
        let c = s.model.agent.contexts.iter().find(|c| c.name == name)?;
        Some(
            s.contexts
                .get(name)
                .cloned()
                .or_else(|| c.content.clone())
                .unwrap_or_default(),
        )
    };
    let names = |s: &Side| -> BTreeMap<String, Option<String>> {
        s.model
            .agent
            .contexts
            .iter()
            .map(|c| (c.name.clone(), c.description.clone()))
            .collect()
    };
    let (na, nb) = (names(a), names(b));
    for name in na.keys().chain(nb.keys()).collect::<BTreeSet<_>>() {
        let (ta, tb) = (text(a, name), text(b, name));
        if ta != tb {
            let kind = match (&ta, &tb) {
                (None, _) => Kind::Added,
                (_, None) => Kind::Removed,
                _ => Kind::Changed,
            };
            let diff = unified(&format!("{name}.md"), ta.as_deref(), tb.as_deref());
            out.push(Change::new(Class::Behaviour, What::Context, name, kind).diff(diff));
        }
        if let (Some(da), Some(db)) = (na.get(name), nb.get(name)) {
            if da != db {
                out.push(
                    Change::new(Class::Behaviour, What::Context, name, Kind::Changed)
                        .field("description")
                        .values(da.clone(), db.clone()),
                );
            }
        }
    }
}

fn data(out: &mut Vec<Change>, a: &Side, b: &Side) {
    let names: BTreeSet<&String> = a.data.keys().chain(b.data.keys()).collect();
    for name in names {
        let (old, new) = (a.data.get(name), b.data.get(name));
        let kind = match (old, new) {
            (None, Some(_)) => Kind::Added,
            (Some(_), None) => Kind::Removed,
            (Some(p), Some(q)) if p != q => Kind::Changed,
            _ => continue,
        };
        let mut change = Change::new(Class::Data, What::Add, name.as_str(), kind)
            .values(old.map(data_text), new.map(data_text));
        if old.or(new).is_some_and(|d| d.directory) {
            change = change.field("directory");
        }
        out.push(change);
    }
}

fn provenance(out: &mut Vec<Change>, a: &Side, b: &Side) {
    if !a.platforms.is_empty() || !b.platforms.is_empty() {
        let (pa, pb): (BTreeSet<&String>, BTreeSet<&String>) =
            (a.platforms.iter().collect(), b.platforms.iter().collect());
        for p in pa.difference(&pb) {
            out.push(Change::new(
                Class::Provenance,
                What::Platform,
                p.as_str(),
                Kind::Removed,
            ));
        }
        for p in pb.difference(&pa) {
            out.push(Change::new(
                Class::Provenance,
                What::Platform,
                p.as_str(),
                Kind::Added,
            ));
        }
    }
    let count = |m: &BTreeMap<String, usize>| -> BTreeMap<String, String> {
        m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()
    };
    Keyed {
        what: What::Referrer,
        added: Class::Provenance,
        removed: Class::Provenance,
        changed: Class::Provenance,
        a: count(&a.referrers),
        b: count(&b.referrers),
    }
    .push(out);
    chain(out, &a.chain, &b.chain);
    // Who signed, as the bundles claim (not verified): one change per kind of bundle.
    let named = |m: &BTreeMap<String, BTreeSet<String>>| -> BTreeMap<String, String> {
        m.iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect::<Vec<_>>().join(", ")))
            .collect()
    };
    Keyed {
        what: What::Signer,
        added: Class::Provenance,
        removed: Class::Provenance,
        changed: Class::Provenance,
        a: named(&a.signers),
        b: named(&b.signers),
    }
    .push(out);
}

/// The FROM chains level by level, as far as both can be compared: a level whose digest is not
/// recorded on a side is compared by reference only and ends the comparison, and a side whose
/// walk was cut adds or removes nothing beyond it.
fn chain(out: &mut Vec<Change>, a: &Chain, b: &Chain) {
    let deepest = a.levels.len().max(b.levels.len());
    for i in 0..deepest {
        let name = level_name(i + 1);
        let (x, y) = (a.levels.get(i), b.levels.get(i));
        let kind = match (x, y) {
            (Some(x), Some(y)) => {
                let differ = x.reference != y.reference
                    || (x.digest.is_some() && y.digest.is_some() && x.digest != y.digest);
                if differ {
                    out.push(
                        Change::new(Class::Provenance, What::Chain, name, Kind::Changed)
                            .values(Some(x.describe()), Some(y.describe())),
                    );
                }
                if x.digest.is_none() || y.digest.is_none() {
                    return;
                }
                continue;
            }
            (None, Some(_)) if a.cut.is_none() => Kind::Added,
            (Some(_), None) if b.cut.is_none() => Kind::Removed,
            _ => return,
        };
        out.push(
            Change::new(Class::Provenance, What::Chain, name, kind)
                .values(x.map(Level::describe), y.map(Level::describe)),
        );
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
