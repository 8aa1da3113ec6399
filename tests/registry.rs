//! Registry integration tests: real registries (no auth, basic, token), pushed and pulled through
//! the `otters` binary, with skopeo as the independent client.

mod support;

use support::images::{self, BinPrefix};
use support::registry::Registry;

#[test]
fn harness_registries_accept_skopeo_pushes() {
    for reg in [
        Registry::start(),
        Registry::start_basic("alice", "s3cret"),
        Registry::start_token(&[("alice", "s3cret")]),
    ] {
        let tmp = tempfile::tempdir().expect("tmp");
        let (idx, _) = images::bin_index(
            &tmp.path().join("l"),
            "v1",
            "hello",
            b"#!/bin/sh\necho hi\n",
            BinPrefix::Io,
            Some("says hi"),
        );
        let creds = match reg.auth {
            support::registry::Auth::None => None,
            _ => Some(("alice", "s3cret")),
        };
        let dest = format!("{}/bins/hello:v1", reg.addr);
        images::skopeo_push(&tmp.path().join("l"), "v1", &dest, creds);
        assert_eq!(
            images::skopeo_digest(&dest, creds),
            idx["digest"].as_str().unwrap_or_default(),
            "{}",
            reg.log()
        );
    }
}
