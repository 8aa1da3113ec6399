//! The table of every diagnostic code, declared once: the [`Code`] enum, its name, default
//! severity, one-line summary and documentation page all come from the one `codes!` list below.
//!
//! Takes: nothing. Returns: [`Code`], [`RULES`] and look-ups over them. Must never: hold
//! documentation anywhere but `docs/rules/<CODE>.md`, which is compiled in with `include_str!`, so
//! that `otters explain CODE` prints exactly the page (a test keeps the table and the pages in
//! step), or depend on any other module of the crate but [`super`] (every stage emits codes, so the
//! table sits at the bottom with [`super::Diagnostic`]).
//!
//! A diagnostic takes its severity from its code ([`Code::default_severity`]); only the
//! `otters.toml` overrides of `check` change it afterwards.

use super::Severity::{self, Error, Info, Warning};
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What the renderers and `otters explain` know about a code: one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleMeta {
    pub code: Code,
    /// Kebab-case "what is wrong" (`name-not-path-safe`).
    pub name: &'static str,
    pub severity: Severity,
    /// One line, lower case, no period.
    pub summary: &'static str,
    /// The whole `docs/rules/<CODE>.md` page.
    pub doc: &'static str,
}

impl RuleMeta {
    /// The rule's page on the web (`<repository>/blob/main/docs/rules/<CODE>.md`, the text
    /// `otters explain` prints): SARIF's `helpUri`, the language server's `codeDescription`.
    /// `None` when Cargo.toml names no repository.
    pub fn help_uri(&self) -> Option<String> {
        let home = env!("CARGO_PKG_REPOSITORY");
        (!home.is_empty()).then(|| format!("{home}/blob/main/docs/rules/{}.md", self.code))
    }

    /// The text of the page's "What it does" section, one paragraph.
    pub fn what_it_does(&self) -> &'static str {
        let Some(start) = self.doc.find("## What it does") else {
            return self.summary;
        };
        let rest = &self.doc[start + "## What it does".len()..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        rest[..end].trim()
    }
}

/// Declares the table once: each row is `Variant = "AFnnn", "kebab-name", Severity, "summary";`,
/// sorted by code. Generates the [`Code`] enum (one variant per row, in row order), [`RULES`] (the
/// rows, in the same order, so `RULES[code as usize]` is the code's row) and [`Code::as_str`].
macro_rules! codes {
    ($($variant:ident = $code:literal, $name:literal, $sev:ident, $summary:literal;)*) => {
        /// A diagnostic code: `AF` + three digits, the first digit saying the stage (0 syntax,
        /// 1 validation, 2 lints, 3 build inputs, 4 resolution, 5 organisation policy). Renders as the code (`AF201`)
        /// wherever it is shown or serialised.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $(
                #[doc = concat!("`", $code, "` ", $name, ": ", $summary, ".")]
                $variant,
            )*
        }

        /// Every code's row, sorted by code (the order of [`Code`]).
        pub static RULES: &[RuleMeta] = &[
            $(
                RuleMeta {
                    code: Code::$variant,
                    name: $name,
                    severity: $sev,
                    summary: $summary,
                    doc: include_str!(concat!("../../../../docs/rules/", $code, ".md")),
                },
            )*
        ];

        impl Code {
            /// Every code, in table order.
            pub const ALL: &[Code] = &[$(Code::$variant),*];

            /// The code as written: `AF201`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }
        }
    };
}

codes! {
    InvalidUtf8 = "AF001", "invalid-utf8", Error, "the file is not valid UTF-8";
    ByteOrderMark = "AF002", "byte-order-mark", Error, "the file starts with a U+FEFF byte-order mark";
    UnknownInstruction = "AF003", "unknown-instruction", Error, "a line starts with a word that is not an instruction";
    MalformedInstruction = "AF004", "malformed-instruction", Error, "an instruction's arguments do not fit its grammar";
    InvalidStringEscape = "AF005", "invalid-string-escape", Error, "a quoted string uses an escape Go's strconv.Unquote rejects";
    UnterminatedHeredoc = "AF006", "unterminated-heredoc", Error, "a heredoc has no terminating marker line";
    UnsupportedSyntax = "AF007", "unsupported-syntax", Error, "the `# syntax=` directive names an unsupported grammar";
    MissingFrom = "AF101", "missing-from", Error, "the file has no FROM instruction";
    FromNotFirst = "AF102", "from-not-first", Error, "an instruction comes before FROM";
    DuplicateFrom = "AF103", "duplicate-from", Error, "FROM appears more than once";
    NameNotPathSafe = "AF104", "name-not-path-safe", Error, "a NAME, CONTEXT, BIN or ADD name is not a safe file name";
    ReservedContextName = "AF105", "reserved-context-name", Error, "a CONTEXT uses a name reserved for generated files";
    ConfigKeyNotDns1123 = "AF106", "config-key-not-dns1123", Error, "a CONFIG key is not a DNS-1123 label";
    RequiredConfigWithValue = "AF107", "required-config-with-value", Error, "a required CONFIG (`!`) also has a value";
    InvalidCapabilityName = "AF108", "invalid-capability-name", Error, "a CAPABILITY name has characters outside [a-z0-9_-]";
    EnvKeyNotUppercase = "AF109", "env-key-not-uppercase", Error, "an ENV key is not upper case";
    ReservedEnvKey = "AF110", "reserved-env-key", Error, "an ENV key is reserved for the executor or for provider credentials";
    ContextFileAndHeredoc = "AF111", "context-file-and-heredoc", Error, "a CONTEXT has both a file:// reference and a heredoc";
    EmptyExec = "AF112", "empty-exec", Error, "EXEC has an empty argument list";
    NonFiniteConfigValue = "AF113", "non-finite-config-value", Error, "a CONFIG value is nan or infinity";
    InvalidAddDestination = "AF114", "invalid-add-destination", Error, "an ADD destination is empty, absolute or climbs out with `..`";
    InvalidMountTarget = "AF115", "invalid-mount-target", Error, "a MOUNT target is not allowed";
    DuplicateMountTarget = "AF116", "duplicate-mount-target", Error, "two MOUNTs have the same target";
    ArgExpansionTooLong = "AF117", "arg-expansion-too-long", Error, "ARG references would expand past the size limit";
    InvalidEgressHost = "AF118", "invalid-egress-host", Error, "an EGRESS host is not a DNS name, a `*.` wildcard or an IP address";
    InvalidEgressPort = "AF119", "invalid-egress-port", Error, "an EGRESS port is not a number from 1 to 65535";
    EgressNoneWithHosts = "AF120", "egress-none-with-hosts", Error, "`EGRESS none` is declared beside hosts";
    DuplicateEgress = "AF121", "duplicate-egress", Error, "two EGRESS lines name the same host and port";
    UnpinnedImageReference = "AF201", "unpinned-image-reference", Warning, "an image reference has no digest and a moving tag";
    SecretInValue = "AF202", "secret-in-value", Warning, "a value looks like a secret";
    UndefinedArg = "AF203", "undefined-arg", Warning, "`${NAME}` refers to an ARG that is not defined";
    UnusedArg = "AF204", "unused-arg", Warning, "an ARG is never referenced";
    ShadowedDeclaration = "AF205", "shadowed-declaration", Warning, "a later CONTEXT, ENV, CONFIG or BIN replaces an earlier one";
    ConfigClearedByRuntime = "AF206", "config-cleared-by-runtime", Warning, "a CONFIG before RUNTIME is discarded";
    DeprecatedAddForm = "AF207", "deprecated-add-form", Warning, "ADD uses the old `/data/...` destination form";
    KeywordCase = "AF208", "keyword-case", Info, "an instruction keyword is not upper case";
    IncompleteScratchAgent = "AF209", "incomplete-scratch-agent", Warning, "a FROM scratch agent lacks RUNTIME, MODEL or NAME";
    HeredocMarkerInBody = "AF210", "heredoc-marker-in-body", Warning, "a heredoc body line contains the marker text";
    UnknownCapability = "AF211", "unknown-capability", Warning, "a CAPABILITY is not in the capability catalogue";
    MisplacedSyntaxDirective = "AF212", "misplaced-syntax-directive", Warning, "a `# syntax=` directive not on line 1 is only a comment";
    IgnoredHeredoc = "AF213", "ignored-heredoc", Warning, "a heredoc on an instruction other than CONTEXT or BIN is discarded";
    SuppressionWithoutReason = "AF214", "suppression-without-reason", Warning, "a suppression comment gives no reason";
    UnusedSuppression = "AF215", "unused-suppression", Warning, "a suppression comment suppresses nothing";
    EmptyContext = "AF216", "empty-context", Info, "a CONTEXT has neither a heredoc nor a file:// reference";
    DuplicateCapability = "AF217", "duplicate-capability", Info, "a CAPABILITY is listed more than once";
    EnvOverridesConfig = "AF218", "env-overrides-config", Info, "an ENV overrides the RUNTIME_* variable of a CONFIG";
    HiddenControlCharacter = "AF219", "hidden-control-character", Warning, "a control character or bidirectional override hides in the file";
    LoaderEnv = "AF223", "loader-env", Warning, "an ENV sets a dynamic-loader variable such as LD_PRELOAD";
    DirectoryAddNotPortable = "AF230", "directory-add-not-portable", Warning, "openotters never extracts a directory ADD: its files are missing there";
    NestedAddNameNotPortable = "AF231", "nested-add-name-not-portable", Warning, "an ADD name with `/`: openotters L refuses the image, alpha.50 flattens it";
    CapabilityUnderscoreNotPortable = "AF232", "capability-underscore-not-portable", Warning, "a CAPABILITY with `_`: openotters L refuses the image";
    MountNotPortable = "AF233", "mount-not-portable", Warning, "openotters drops MOUNT: the agent starts without the mount";
    LongContextNameNotPortable = "AF234", "long-context-name-not-portable", Warning, "a CONTEXT name over 60 characters: openotters L refuses to start the agent";
    AddWithoutDestinationNotPortable = "AF235", "add-without-destination-not-portable", Warning, "an ADD without a destination: openotters alpha.50 cannot parse the Agentfile";
    EgressNotPortable = "AF236", "egress-not-portable", Warning, "openotters ignores EGRESS: the agent runs with whatever network it is given";
    BuildSourceNotFound = "AF301", "build-source-not-found", Error, "an ADD or file:// source does not exist";
    BuildSourceEscapesContext = "AF302", "build-source-escapes-context", Error, "an ADD or file:// source lies outside the build context";
    BuildSourceUnreadable = "AF303", "build-source-unreadable", Error, "an ADD or file:// source cannot be read";
    ImageNotFound = "AF401", "image-not-found", Error, "an image does not exist in its registry";
    RegistryDenied = "AF402", "registry-denied", Error, "a registry refused access";
    MissingBinAnnotation = "AF403", "missing-bin-annotation", Error, "a RUNTIME or BIN image lacks the bin name annotation";
    MalformedReference = "AF404", "malformed-reference", Error, "an image reference is malformed";
    UnpinnedOffline = "AF405", "unpinned-offline", Error, "an offline build has no pin for an image reference";
    LockOutOfDate = "AF406", "lock-out-of-date", Error, "resolution would change Agentfile.lock under --locked";
    InheritanceCycle = "AF407", "inheritance-cycle", Error, "FROM parents form a cycle";
    InheritanceTooDeep = "AF408", "inheritance-too-deep", Error, "the FROM chain is more than 10 levels deep";
    LockUnreadable = "AF409", "lock-unreadable", Error, "Agentfile.lock cannot be read or parsed";
    RegistryUnreachable = "AF410", "registry-unreachable", Error, "a registry cannot be reached, or no HTTP client can be set up";
    PlatformUnavailable = "AF411", "platform-unavailable", Error, "an image has no manifest for the target platform";
    RegistryError = "AF412", "registry-error", Error, "a registry sent an error or content otters cannot verify";
    RegistryNotAllowed = "AF501", "registry-not-allowed", Error, "a RUNTIME, BIN or FROM image comes from a repository the policy does not allow";
    ProviderNotAllowed = "AF502", "provider-not-allowed", Error, "MODEL names a provider the policy does not allow";
    CapabilityNotAllowed = "AF503", "capability-not-allowed", Error, "a CAPABILITY the policy does not allow";
    BinNotAllowed = "AF504", "bin-not-allowed", Error, "a BIN name the policy does not allow";
    MountNotAllowed = "AF505", "mount-not-allowed", Error, "a MOUNT asks more access than the policy allows";
    ImageNotPinned = "AF506", "image-not-pinned", Error, "an image reference has no digest and the policy requires one";
    EgressNotAllowed = "AF507", "egress-not-allowed", Error, "an EGRESS destination the policy does not allow";
}

impl Code {
    /// This code's row of the table.
    pub fn meta(self) -> &'static RuleMeta {
        // RULES and Code are generated from the same rows in the same order.
        &RULES[self as usize]
    }

    /// The severity a diagnostic with this code has unless `otters.toml` changes it.
    pub fn default_severity(self) -> Severity {
        self.meta().severity
    }

    /// The kebab-case name (`unpinned-image-reference`).
    pub fn name(self) -> &'static str {
        self.meta().name
    }

    /// The one-line summary.
    pub fn summary(self) -> &'static str {
        self.meta().summary
    }

    /// The whole `docs/rules/<CODE>.md` page.
    pub fn doc(self) -> &'static str {
        self.meta().doc
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A string that names no code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCode;

impl fmt::Display for UnknownCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown diagnostic code")
    }
}

impl std::error::Error for UnknownCode {}

impl FromStr for Code {
    type Err = UnknownCode;

    /// `AF201`, matched case-insensitively and ignoring surrounding white space.
    fn from_str(s: &str) -> Result<Code, UnknownCode> {
        let s = s.trim();
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
            .ok_or(UnknownCode)
    }
}

/// The rule for a code, matched case-insensitively (`af101` finds AF101).
pub fn lookup(code: &str) -> Option<&'static RuleMeta> {
    code.parse::<Code>().ok().map(Code::meta)
}

/// The rule whose kebab-case name is `name` (`missing-from`).
pub fn by_name(name: &str) -> Option<&'static RuleMeta> {
    RULES.iter().find(|r| r.name == name.trim())
}

/// Codes or names close to `query`, best first, for "did you mean" help (at most five).
pub fn suggestions(query: &str) -> Vec<&'static RuleMeta> {
    let q = query.trim().to_ascii_uppercase();
    let ql = query.trim().to_ascii_lowercase();
    let mut scored: Vec<(usize, &'static RuleMeta)> = RULES
        .iter()
        .filter_map(|r| {
            let by_code = strsim::levenshtein(&q, r.code.as_str());
            let by_name = strsim::levenshtein(&ql, r.name);
            let digits_match = q.len() == 3
                && q.bytes().all(|b| b.is_ascii_digit())
                && r.code.as_str().ends_with(&q);
            let score = if digits_match {
                0
            } else {
                by_code.min(by_name)
            };
            let limit = if is_code_shaped(&q) { 1 } else { 2 };
            (score <= limit || (ql.len() >= 4 && r.name.contains(&ql))).then_some((score, r))
        })
        .collect();
    scored.sort_by_key(|&(s, r)| (s, r.code));
    scored.into_iter().take(5).map(|(_, r)| r).collect()
}

/// True when `code` has the shape `AF` + three digits.
pub fn is_code_shaped(code: &str) -> bool {
    let b = code.as_bytes();
    b.len() == 5 && code.starts_with("AF") && b[2..].iter().all(u8::is_ascii_digit)
}

/// The closing paragraph of a rule's page, generated from its default severity so a page never
/// promises a suppression the tool refuses: errors can be neither suppressed nor lowered.
pub fn suppression_note(rule: &RuleMeta) -> String {
    if rule.severity == Error {
        format!(
            "{} is an error: it can be neither suppressed with `# otters:ignore` nor lowered in \
             `otters.toml`, because the build would reject the file anyway. Fix the file as shown \
             above.",
            rule.code
        )
    } else {
        format!(
            "Suppress one finding with `# otters:ignore {} <reason>` on the line above it, or change \
             its severity in `otters.toml` (see [docs/lint.md](../lint.md)).",
            rule.code
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_unique_and_well_formed() {
        for w in RULES.windows(2) {
            assert!(
                w[0].code.as_str() < w[1].code.as_str(),
                "{} before {}",
                w[0].code,
                w[1].code
            );
        }
        for r in RULES {
            assert!(is_code_shaped(r.code.as_str()), "{}", r.code);
            assert!(
                r.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{} name {}",
                r.code,
                r.name
            );
            assert!(
                !r.summary.ends_with('.'),
                "{} summary ends with a period",
                r.code
            );
        }
    }

    #[test]
    fn every_page_matches_its_row() {
        for r in RULES {
            let head = format!(
                "# {}: {}\n\nDefault severity: **{}** · Stage: ",
                r.code, r.name, r.severity
            );
            assert!(
                r.doc.starts_with(&head),
                "docs/rules/{}.md must start with {head:?}",
                r.code
            );
            for section in [
                "## What it does",
                "## Why is this bad?",
                "## Example",
                "## Use instead",
            ] {
                assert!(
                    r.doc.contains(section),
                    "docs/rules/{}.md lacks {section}",
                    r.code
                );
            }
            assert!(r.what_it_does().len() > 20, "{}", r.code);
        }
    }

    /// Every page ends with the note its severity calls for. `OTTERS_BLESS_RULE_PAGES=1 cargo test
    /// --lib rule_pages` rewrites the last paragraph of each page instead of failing.
    #[test]
    fn rule_pages_end_with_the_suppression_note_of_their_severity() {
        let bless = std::env::var_os("OTTERS_BLESS_RULE_PAGES").is_some();
        let mut wrong = Vec::new();
        for r in RULES {
            let note = suppression_note(r);
            let body = r.doc.trim_end();
            let last = body.rsplit("\n\n").next().unwrap_or("");
            if last == note {
                continue;
            }
            if bless {
                let path = format!(
                    "{}/../../docs/rules/{}.md",
                    env!("CARGO_MANIFEST_DIR"),
                    r.code
                );
                let keep = if last.contains("otters:ignore") || last.contains("is an error: it can")
                {
                    &body[..body.len() - last.len()]
                } else {
                    body
                };
                let text = format!("{}\n\n{note}\n", keep.trim_end());
                std::fs::write(&path, text).expect("rewrite page");
            } else {
                wrong.push(r.code);
            }
        }
        assert!(
            wrong.is_empty(),
            "pages whose closing note does not match their severity: {wrong:?} \
             (run with OTTERS_BLESS_RULE_PAGES=1 to regenerate)"
        );
        let errors: Vec<_> = RULES.iter().filter(|r| r.severity == Error).collect();
        assert!(!errors.is_empty());
        for r in errors {
            assert!(
                !r.doc.contains(&format!("# otters:ignore {}", r.code)),
                "{}",
                r.code
            );
        }
    }

    #[test]
    fn every_page_on_disk_is_in_the_table() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rules");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("docs/rules exists")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| {
                std::path::Path::new(n)
                    .extension()
                    .is_some_and(|e| e == "md")
            })
            .collect();
        on_disk.sort();
        let in_table: Vec<String> = RULES.iter().map(|r| format!("{}.md", r.code)).collect();
        assert_eq!(on_disk, in_table);
    }

    /// The generated pieces agree: each code's row is its own, its variant is its name in
    /// CamelCase, and the code round-trips through `as_str`, `Display` and `FromStr`.
    #[test]
    fn variants_rows_and_strings_agree() {
        assert_eq!(Code::ALL.len(), RULES.len());
        for (i, &c) in Code::ALL.iter().enumerate() {
            assert_eq!(c as usize, i);
            assert_eq!(c.meta().code, c);
            let camel: String = c
                .name()
                .split('-')
                .map(|w| {
                    let mut cs = w.chars();
                    cs.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + cs.as_str())
                        .unwrap_or_default()
                })
                .collect();
            assert_eq!(format!("{c:?}"), camel, "{c}");
            assert_eq!(c.to_string(), c.as_str());
            assert_eq!(c.as_str().parse::<Code>(), Ok(c));
            assert_eq!(c.as_str().to_ascii_lowercase().parse::<Code>(), Ok(c));
            assert_eq!(serde_json::to_string(&c).ok(), Some(format!("\"{c}\"")));
        }
        assert_eq!(" af201 ".parse::<Code>(), Ok(Code::UnpinnedImageReference));
        assert_eq!("AF999".parse::<Code>(), Err(UnknownCode));
        assert_eq!(format!("[{:<7}]", Code::MissingFrom), "[AF101  ]");
        assert_eq!(
            Code::UnpinnedImageReference.default_severity(),
            Severity::Warning
        );
        assert_eq!(Code::KeywordCase.default_severity(), Severity::Info);
    }

    #[test]
    fn suggestions_find_near_codes_and_names() {
        assert_eq!(suggestions("205")[0].code, Code::ShadowedDeclaration);
        assert!(suggestions("AF10")
            .iter()
            .any(|r| r.code == Code::MissingFrom));
        assert!(suggestions("AF2O5")
            .iter()
            .any(|r| r.code == Code::ShadowedDeclaration));
        assert!(suggestions("missing-frm")
            .iter()
            .any(|r| r.code == Code::MissingFrom));
        assert!(suggestions("zzzzzzzz").is_empty());
        assert_eq!(lookup("af101").map(|r| r.name), Some("missing-from"));
        assert_eq!(by_name("unused-arg").map(|r| r.code), Some(Code::UnusedArg));
    }
}
