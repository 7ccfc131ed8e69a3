//! Exit statuses: the values `main` returns and the man pages' EXIT STATUS
//! sections come from this one table.

/// Success (for `serve`: stopped by SIGTERM or SIGINT).
pub const SUCCESS: u8 = 0;
/// The command failed; the message on stderr says why.
pub const FAILURE: u8 = 1;
/// Invalid command line, environment variable or configuration file (clap
/// uses the same status for its own usage errors).
pub const USAGE: u8 = 2;
/// `diff`: the trees differ beyond the allowed differences.
pub const DIFF_DIFFERENT: u8 = 1;
/// `diff`: the trees could not be compared.
pub const DIFF_ERROR: u8 = 2;

/// What each status means for the command named `command` (`None`: the
/// top-level page, which runs `serve` when no subcommand is given).
pub fn documented(command: Option<&str>) -> Vec<(u8, &'static str)> {
    match command {
        Some("diff") => vec![
            (SUCCESS, "The trees are identical, or every difference is allowed by an --allow rule."),
            (DIFF_DIFFERENT, "Any other difference remains."),
            (
                DIFF_ERROR,
                "The trees could not be compared (an application not found, a bus error, a refused \
                 rules file) or the command line was invalid.",
            ),
        ],
        Some("serve") | None => vec![
            (SUCCESS, "Stopped by SIGTERM or SIGINT (or, with --print-config, the settings were printed)."),
            (
                FAILURE,
                "The bridge could not run, e.g. another bridge already serves the socket; the \
                 message on standard error says why.",
            ),
            (
                USAGE,
                "Invalid command line, environment variable or configuration file; the message \
                 names the option, or the file and line. The systemd unit does not restart the \
                 bridge on this status.",
            ),
        ],
        Some("session") => vec![
            (SUCCESS, "The command exited with status 0."),
            (
                FAILURE,
                "The private buses, the registry or the bridge could not start (the message says \
                 why), or the command exited with status 1.",
            ),
            (
                USAGE,
                "Invalid command line, or the command exited with status 2. Any other status is \
                 the command's own (128 + N when a signal N killed it).",
            ),
        ],
        Some(_) => vec![
            (SUCCESS, "Success."),
            (FAILURE, "The command failed; the message on standard error says why."),
            (USAGE, "Invalid command line or environment variable."),
        ],
    }
}
