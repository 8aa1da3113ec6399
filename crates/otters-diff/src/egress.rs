//! EGRESS changes (docs/diff.md, "Egress"): what each side may connect to, compared by
//! destination (host and port).
//!
//! Takes: the two agents. Returns: the changes, each an escalation when the agent may now reach
//! something it could not, else a behaviour change. Must never: call a narrowing an escalation
//! (a name where a wildcard covered it, a destination removed, `none`), or a widening anything
//! else.
//!
//! An agent that declares no EGRESS may connect anywhere (`otters run` gives it the executor's
//! network, `otters kube` writes no egress policy), so declaring EGRESS where there was none
//! narrows it, and dropping every EGRESS line widens it.
use crate::change::{Change, Class, Kind, What};
use otters_agentfile::ir::egress::{Dest, Host, Policy, NONE};
use otters_agentfile::ir::Agent;

/// How an agent without EGRESS is shown: it may connect anywhere.
pub const UNDECLARED: &str = "(undeclared)";

/// The policy as one value: `(undeclared)`, `none`, or the destinations (`host:port, …`).
fn shown(p: &Policy) -> String {
    match p {
        Policy::Undeclared => UNDECLARED.to_owned(),
        Policy::Nothing => NONE.to_owned(),
        Policy::Allow(list) => list
            .iter()
            .map(|a| a.dest.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether `allow` already lets a connection to `d` through: the same destination, or a
/// `*.` wildcard on the same port that matches its name.
fn covered(allow: &[Dest], d: &Dest) -> bool {
    allow.iter().any(|x| {
        x.port == d.port
            && match (&x.host, &d.host) {
                (Host::Wildcard(_), Host::Name(n)) => x.host.matches(n),
                (a, b) => a == b,
            }
    })
}

/// Every EGRESS change from `x` to `y`.
pub fn changes(out: &mut Vec<Change>, before: &Agent, after: &Agent) {
    let (a, b) = (before.egress_policy(), after.egress_policy());
    let whole = |class: Class| {
        Change::new(class, What::Egress, "egress", Kind::Changed)
            .values(Some(shown(&a)), Some(shown(&b)))
    };
    match (&a, &b) {
        (Policy::Undeclared, Policy::Undeclared) | (Policy::Nothing, Policy::Nothing) => {}
        (Policy::Allow(old), Policy::Allow(new)) => destinations(out, old, new),
        // Anywhere → a declaration, or destinations → nothing: narrower.
        (Policy::Undeclared, _) | (Policy::Allow(_), Policy::Nothing) => {
            out.push(whole(Class::Behaviour));
        }
        // A declaration → anywhere, or nothing → destinations: wider.
        (_, Policy::Undeclared) | (Policy::Nothing, Policy::Allow(_)) => {
            out.push(whole(Class::Escalation));
        }
    }
}

/// Two allow-lists, destination by destination: one added is an escalation unless the other
/// side's list already let it through (a name under a wildcard it had); one removed is a
/// behaviour change, as is a changed description.
fn destinations(
    out: &mut Vec<Change>,
    a: &[otters_agentfile::ir::egress::Allowed],
    b: &[otters_agentfile::ir::egress::Allowed],
) {
    let dests = |v: &[otters_agentfile::ir::egress::Allowed]| -> Vec<Dest> {
        v.iter().map(|x| x.dest.clone()).collect()
    };
    let (da, db) = (dests(a), dests(b));
    for n in b {
        match a.iter().find(|o| o.dest == n.dest) {
            None => {
                let class = if covered(&da, &n.dest) {
                    Class::Behaviour
                } else {
                    Class::Escalation
                };
                out.push(Change::new(
                    class,
                    What::Egress,
                    n.dest.to_string(),
                    Kind::Added,
                ));
            }
            Some(o) if o.description != n.description => out.push(
                Change::new(
                    Class::Behaviour,
                    What::Egress,
                    n.dest.to_string(),
                    Kind::Changed,
                )
                .field("description")
                .values(o.description.clone(), n.description.clone()),
            ),
            Some(_) => {}
        }
    }
    for o in a.iter().filter(|o| !db.contains(&o.dest)) {
        out.push(Change::new(
            Class::Behaviour,
            What::Egress,
            o.dest.to_string(),
            Kind::Removed,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::diagnostic::SourceFile;

    fn agent(egress: &str) -> Agent {
        let text = format!("FROM scratch\nRUNTIME r.example/rt:1\nMODEL anthropic/x\n{egress}");
        let file = SourceFile::new("Agentfile", &text);
        let ast = otters_agentfile::syntax::parse(&file);
        let args = std::collections::BTreeMap::default();
        let (model, _) = otters_agentfile::ir::from_ast(&ast, &file, &args);
        model.agent
    }

    /// A change as `(class, kind, name, before, after)`.
    type Seen = (Class, Kind, String, Option<String>, Option<String>);

    /// The changes from `a` to `b`.
    fn diff(a: &str, b: &str) -> Vec<Seen> {
        let mut out = Vec::new();
        changes(&mut out, &agent(a), &agent(b));
        out.into_iter()
            .map(|c| {
                assert_eq!(c.what, What::Egress);
                (c.class, c.change, c.name, c.before, c.after)
            })
            .collect()
    }

    fn classes(a: &str, b: &str) -> Vec<(Class, Kind, String)> {
        diff(a, b).into_iter().map(|c| (c.0, c.1, c.2)).collect()
    }

    const API: &str = "EGRESS api.example.com\n";

    #[test]
    fn the_same_declaration_has_no_change() {
        for e in [
            "",
            "EGRESS none\n",
            API,
            "EGRESS a.example.com:80\nEGRESS 10.0.0.1:5432\n",
        ] {
            assert!(diff(e, e).is_empty(), "{e}");
        }
        // Order and repetition do not matter; the default port is 443.
        assert!(diff(
            "EGRESS b.example.com\nEGRESS a.example.com\n",
            "EGRESS a.example.com:443\nEGRESS b.example.com\nEGRESS b.example.com\n"
        )
        .is_empty());
    }

    #[test]
    fn a_destination_a_port_or_a_wildcard_added_is_an_escalation() {
        let esc = |name: &str| (Class::Escalation, Kind::Added, name.to_owned());
        assert_eq!(
            classes(API, "EGRESS api.example.com\nEGRESS evil.example:443\n"),
            [esc("evil.example:443")]
        );
        assert_eq!(
            classes(API, "EGRESS api.example.com\nEGRESS api.example.com:80\n"),
            [esc("api.example.com:80")]
        );
        // A wildcard where a name was: the wildcard widens, the name's removal does not.
        assert_eq!(
            classes(API, "EGRESS *.example.com\n"),
            [
                esc("*.example.com:443"),
                (
                    Class::Behaviour,
                    Kind::Removed,
                    "api.example.com:443".into()
                )
            ]
        );
        // A name where an address was: the name may resolve anywhere.
        assert_eq!(
            classes("EGRESS 10.0.0.1:5432\n", "EGRESS db.example.com:5432\n")[0],
            esc("db.example.com:5432")
        );
    }

    #[test]
    fn a_destination_removed_or_narrowed_is_a_behaviour_change() {
        assert_eq!(
            classes("EGRESS api.example.com\nEGRESS b.example.com:80\n", API),
            [(Class::Behaviour, Kind::Removed, "b.example.com:80".into())]
        );
        // A name the wildcard already let through (same port): narrower, not wider.
        assert_eq!(
            classes("EGRESS *.example.com\n", API),
            [
                (Class::Behaviour, Kind::Added, "api.example.com:443".into()),
                (Class::Behaviour, Kind::Removed, "*.example.com:443".into())
            ]
        );
        // Not on another port, nor two labels down (a wildcard matches one).
        for (b, name) in [
            ("EGRESS api.example.com:80\n", "api.example.com:80"),
            ("EGRESS a.b.example.com\n", "a.b.example.com:443"),
        ] {
            assert_eq!(
                classes("EGRESS *.example.com\n", b)[0],
                (Class::Escalation, Kind::Added, name.to_owned()),
                "{b}"
            );
        }
    }

    #[test]
    fn the_policy_as_a_whole_widens_or_narrows() {
        let hosts = "EGRESS api.example.com\nEGRESS [2001:db8::1]:853\n";
        let listed = "api.example.com:443, [2001:db8::1]:853";
        let whole = |class, before: &str, after: &str| {
            vec![(
                class,
                Kind::Changed,
                "egress".to_owned(),
                Some(before.to_owned()),
                Some(after.to_owned()),
            )]
        };
        // Undeclared may connect anywhere: any declaration narrows it, dropping one widens.
        assert_eq!(diff("", hosts), whole(Class::Behaviour, UNDECLARED, listed));
        assert_eq!(
            diff("", "EGRESS none\n"),
            whole(Class::Behaviour, UNDECLARED, "none")
        );
        assert_eq!(
            diff(hosts, ""),
            whole(Class::Escalation, listed, UNDECLARED)
        );
        assert_eq!(
            diff("EGRESS none\n", ""),
            whole(Class::Escalation, "none", UNDECLARED)
        );
        // none → hosts opens the network; hosts → none closes it.
        assert_eq!(
            diff("EGRESS none\n", hosts),
            whole(Class::Escalation, "none", listed)
        );
        assert_eq!(
            diff(hosts, "EGRESS none\n"),
            whole(Class::Behaviour, listed, "none")
        );
    }

    #[test]
    fn a_description_only_is_a_behaviour_change() {
        let mut out = Vec::new();
        changes(
            &mut out,
            &agent("EGRESS api.example.com \"weather\"\n"),
            &agent("EGRESS api.example.com \"weather and news\"\n"),
        );
        assert_eq!(out.len(), 1, "{out:#?}");
        let c = &out[0];
        assert_eq!(
            (c.class, c.change, c.name.as_str(), c.field),
            (
                Class::Behaviour,
                Kind::Changed,
                "api.example.com:443",
                Some("description")
            )
        );
        assert_eq!(
            (c.before.as_deref(), c.after.as_deref()),
            (Some("weather"), Some("weather and news"))
        );
    }
}
