//! A synchronous OCI distribution client: resolve references, fetch manifests and blobs, upload
//! blobs and manifests.
//!
//! Takes: [`Reference`]s and a [`ClientOptions`]. Returns: verified bytes, descriptors and typed
//! errors that name the registry and repository and say what to do. Must never: print, hand out
//! bytes whose digest was not checked, or expose async in its API (a current-thread tokio runtime
//! runs inside). Whole-image transfers to and from the local store live in [`transfer`].
//!
//! Built directly on reqwest rather than oci-client: oci-client cannot mount across repositories
//! under token auth (its token has only the target repository's scope), has no retries, and its
//! blob download does not let us verify before the store's rename. See docs/registries.md.
//!
//! The client in files: `error` (its errors), `client` (set-up, login check, access check),
//! `read` (manifests, blobs, mirrors on the way), `write` (mounts, uploads, manifests), over the
//! transport in `http`. This file only names them; the items are re-exported here at their
//! public paths, and the files import each other directly, never through here.
//!
//! [`Reference`]: crate::reference::Reference

pub mod auth;
pub(crate) mod client;
pub mod config;
pub(crate) mod error;
pub(crate) mod http;
pub mod login;
pub mod mirror;
pub(crate) mod read;
pub mod referrers;
pub mod sources;
pub mod transfer;
pub(crate) mod write;

pub use crate::validate::MAX_MANIFEST;
pub use client::{scope, ClientOptions, RegistryClient};
pub use error::{is_on_this_machine, RegistryError, UrlRefusal};
pub use http::Retry;
pub use read::{Fetched, Resolved, MANIFEST_ACCEPT};
