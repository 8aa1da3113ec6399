//! `otters explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A diagnostic code such as AF101 (or a rule name such as missing-from)
    #[arg(required_unless_present = "list")]
    pub code: Option<String>,
    /// List every code with its severity, name and summary
    #[arg(long, conflicts_with = "code")]
    pub list: bool,
    /// Output format of --list
    #[arg(long, value_enum, default_value_t = ListFormat::Human, requires = "list")]
    pub format: ListFormat,
}
