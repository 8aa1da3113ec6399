//! The integration suite: one test binary whose modules drive the real `otters` binary (and the
//! libraries) as a user, an editor or CI would. One binary links once and shares `support`, the
//! harness of real registries, OCI images and tools.

mod support;

mod archive_referrers;
mod bin_contract;
mod bin_pack;
mod build_cli;
mod ci_files;
mod ci_reports;
mod cli_output;
mod compat;
mod copy;
mod copy_policy;
mod copy_stream;
mod editors;
mod emitted_codes;
mod example_warnings;
mod export;
mod export_inputs;
mod flag_hints;
mod fmt;
mod habits;
mod interop;
mod keyless;
mod kube;
mod kube_inputs;
mod lint_cli;
mod lsp;
mod mirrors;
mod multiplatform;
mod pipeline;
mod policy;
mod readme_tour;
mod referrers;
mod registry;
mod registry_config;
mod registry_ux;
mod run;
mod run_args;
mod security_extract;
mod security_frontend;
mod security_inputs;
mod security_layouts;
mod security_registry;
mod security_store;
mod security_web;
mod source_date_epoch_git;
mod store;
mod store_hygiene;
mod streams;
mod supply;
mod tidy;
mod transfer_progress;
mod trust_messages;
mod umask;
