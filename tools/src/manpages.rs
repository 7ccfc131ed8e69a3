//! The hidden `generate-manpages DIR` and `generate-completions DIR`
//! subcommands: packaging (the Makefile, cargo-deb) builds the man pages and
//! shell completions from the same clap definition the binary parses with,
//! so they never drift from `--help`. The EXIT STATUS, ENVIRONMENT and FILES
//! sections clap_mangen does not write come from the same sources as the
//! behaviour: [`crate::exit_status`], the options' `env` attributes, and
//! [`newton_atspi_daemon::config`]'s paths and settable options.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use clap_complete::Shell;

use crate::cli;
use newton_atspi_daemon::config;

/// The binary's name, as installed.
const BIN: &str = "newton-atspi-bridge";

/// Writes `newton-atspi-bridge.1` and one `newton-atspi-bridge-SUB.1` per
/// visible subcommand into `dir`.
pub fn write_manpages(dir: &Path) -> Result<(), Box<dyn Error>> {
    create_dir(dir)?;
    let mut command = cli::command().disable_help_subcommand(true);
    command.build();
    write_pages(&command, None, dir)?;
    println!("man pages written to {}", dir.display());
    Ok(())
}

/// Writes `command`'s page and, first, those of its visible subcommands.
/// `subcommand` is `None` for the top-level page.
fn write_pages(
    command: &clap::Command,
    subcommand: Option<&str>,
    dir: &Path,
) -> Result<(), Box<dyn Error>> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, Some(sub.get_name()), dir)?;
    }
    let man = clap_mangen::Man::new(command.clone());
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    let page = String::from_utf8(page)?;
    let page = with_sections(&page, &extra_sections(command, subcommand));
    fs::write(&path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

/// Inserts `sections` before VERSION (where man-pages(7) puts EXIT STATUS,
/// ENVIRONMENT and FILES), or at the end when there is none.
fn with_sections(page: &str, sections: &str) -> String {
    match page.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{}{}", &page[..at], sections, &page[at + 1..]),
        None => format!("{page}{sections}"),
    }
}

/// EXIT STATUS, ENVIRONMENT and (for `serve` and the top-level page) FILES.
fn extra_sections(command: &clap::Command, subcommand: Option<&str>) -> String {
    use roff::{bold, italic, roman, Roff};
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in crate::exit_status::documented(subcommand) {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(code.to_string())]);
        roff.text([roman(meaning)]);
    }

    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in environment(command, subcommand) {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(name)]);
        roff.text([roman(meaning)]);
    }

    if reads_configuration(subcommand) {
        roff.control("SH", ["FILES"]);
        let system = Path::new(config::SYSTEM_DIR).join(config::FILE_NAME);
        roff.control("TP", [] as [&str; 0]);
        roff.text([italic(system.display().to_string())]);
        roff.text([roman("System-wide configuration of serve.")]);
        roff.control("TP", [] as [&str; 0]);
        roff.text([italic(format!(
            "$XDG_CONFIG_HOME/{}/{}",
            config::USER_SUBDIR,
            config::FILE_NAME
        ))]);
        roff.text([roman(
            "The user's configuration (~/.config/... when XDG_CONFIG_HOME is unset); a key set \
             here overrides the system file's.",
        )]);
        roff.control("TP", [] as [&str; 0]);
        roff.text([italic("$XDG_RUNTIME_DIR/newton-atspi/bridge.sock")]);
        roff.text([roman(
            "The sender socket (directory 0700); bridge.sock.status beside it answers \
             newton-atspi-bridge status.",
        )]);
        roff.control("PP", [] as [&str; 0]);
        roff.text([roman(
            "Both files are optional. Precedence, highest first: command line, environment, user \
             file, system file, built-in default (serve --print-config shows where each value \
             came from). One key = value per line; blank lines and lines starting with # are \
             ignored; the value is the rest of the line, trimmed, without quoting. Lists use the \
             separator of their environment variable; an empty value clears a list. An unknown \
             key, a key repeated in one file or an invalid value stops serve with exit status 2, \
             naming the file and line. The socket path is not a setting: senders find it through \
             NEWTON_ATSPI_SOCKET, which they share with the bridge. The keys:",
        )]);
        let mut built = cli::command();
        built.build();
        for setting in config::settable(&built) {
            roff.control("TP", [] as [&str; 0]);
            roff.text([bold(setting.key.clone())]);
            roff.text([roman(format!(
                "--{} (environment: {}). {}",
                setting.key,
                setting.env,
                sentence(&setting.help)
            ))]);
        }
    }
    let preamble = Roff::new().render();
    let rendered = roff.render();
    rendered
        .strip_prefix(&preamble)
        .unwrap_or(&rendered)
        .to_owned()
}

/// clap help lines end without a full stop; man page paragraphs with one.
fn sentence(help: &str) -> String {
    match help.ends_with('.') || help.is_empty() {
        true => help.to_owned(),
        false => format!("{help}."),
    }
}

/// The configuration files apply to `serve`, which a bare
/// `newton-atspi-bridge` runs.
fn reads_configuration(subcommand: Option<&str>) -> bool {
    matches!(subcommand, None | Some(config::CONFIGURED_SUBCOMMAND))
}

/// Every variable `command` reads: its options' `env` attributes (for the
/// top-level page, `serve`'s too), then those read outside clap.
fn environment(command: &clap::Command, subcommand: Option<&str>) -> Vec<(String, String)> {
    let mut commands = vec![command];
    if subcommand.is_none() {
        commands.extend(command.find_subcommand(config::CONFIGURED_SUBCOMMAND));
    }
    let mut variables: Vec<(String, String)> = Vec::new();
    for cmd in commands {
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
                continue;
            };
            let name = env.to_string_lossy().into_owned();
            if variables.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            variables.push((
                name,
                format!("Same as --{long} (which overrides it). {}", sentence(&help)),
            ));
        }
    }
    let serves = reads_configuration(subcommand);
    let uses_socket = serves || matches!(subcommand, Some("replay" | "record" | "status"));
    let mut other = |name: &str, meaning: &str| {
        variables.push((name.to_owned(), meaning.to_owned()));
    };
    other(
        "RUST_LOG",
        "Log filter (tracing's EnvFilter syntax, e.g. debug or newton=trace); overrides --log-level.",
    );
    if uses_socket {
        other(
            newton_push_protocol::SOCKET_ENV_VAR,
            "The bridge's sender socket when --socket is not given (senders read it too).",
        );
        other(
            "XDG_RUNTIME_DIR",
            "The default socket is $XDG_RUNTIME_DIR/newton-atspi/bridge.sock.",
        );
    }
    if serves {
        other(
            "XDG_CONFIG_HOME",
            "Where the user's configuration file is (see FILES); ~/.config when unset.",
        );
        other(
            "NEWTON_ATSPI_NO_P2P",
            "1 keeps every AT-SPI call on the bus (no peer-to-peer socket per application).",
        );
    }
    variables
}

/// Writes bash (`newton-atspi-bridge`), zsh (`_newton-atspi-bridge`) and fish
/// (`newton-atspi-bridge.fish`) completions into `dir`, named as each
/// shell's completion directory expects.
pub fn write_completions(dir: &Path) -> Result<(), Box<dyn Error>> {
    create_dir(dir)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut command = cli::command();
        let written = clap_complete::generate_to(shell, &mut command, BIN, dir).map_err(|e| {
            format!(
                "cannot write {shell} completions into {}: {e}",
                dir.display()
            )
        })?;
        rename_for_shell(shell, &written)?;
    }
    println!("completions written to {}", dir.display());
    Ok(())
}

/// bash-completion looks files up by the command's bare name; clap names the
/// bash file `NAME.bash`.
fn rename_for_shell(shell: Shell, written: &Path) -> Result<PathBuf, Box<dyn Error>> {
    if shell != Shell::Bash {
        return Ok(written.to_owned());
    }
    let target = written.with_file_name(BIN);
    fs::rename(written, &target)
        .map_err(|e| format!("cannot rename {}: {e}", written.display()))?;
    Ok(target)
}

fn create_dir(dir: &Path) -> Result<(), Box<dyn Error>> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("newton-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn writes_a_page_per_visible_subcommand() {
        let dir = scratch("manpages");
        write_manpages(&dir).unwrap();
        for page in [
            "", "-serve", "-replay", "-dump", "-demo", "-record", "-diff", "-status",
        ] {
            let path = dir.join(format!("{BIN}{page}.1"));
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            assert!(text.contains(".TH"), "{path:?} is not a man page");
        }
        assert!(!dir.join(format!("{BIN}-generate-manpages.1")).exists());
        let main = fs::read_to_string(dir.join(format!("{BIN}.1"))).unwrap();
        assert!(
            main.contains("record"),
            "the main page lists the subcommands"
        );
        let serve = fs::read_to_string(dir.join(format!("{BIN}-serve.1"))).unwrap();
        let status = fs::read_to_string(dir.join(format!("{BIN}-status.1"))).unwrap();
        let diff = fs::read_to_string(dir.join(format!("{BIN}-diff.1"))).unwrap();
        for page in [&main, &serve, &status, &diff] {
            let exit = page
                .find(".SH \"EXIT STATUS\"")
                .expect("an EXIT STATUS section");
            let env = page
                .find(".SH ENVIRONMENT")
                .expect("an ENVIRONMENT section");
            let version = page.find(".SH VERSION").expect("a VERSION section");
            assert!(exit < env && env < version, "man-pages(7) order");
        }
        for page in [&main, &serve] {
            assert!(page.contains(".SH FILES"));
            assert!(
                page.contains("/etc/newton\\-atspi\\-bridge/bridge.conf"),
                "{page}"
            );
            for variable in [
                "NEWTON_ATSPI_MAX_NODES",
                "NEWTON_ATSPI_MAX_DEPTH",
                "NEWTON_ATSPI_MAX_FRAME_BYTES",
                "NEWTON_ATSPI_SOCKET",
                "AT_SPI_BUS_ADDRESS",
            ] {
                assert!(
                    page.contains(variable),
                    "{variable} in the serve and main pages"
                );
            }
            assert!(
                page.contains("max\\-queued\\-bytes"),
                "the settable keys are listed"
            );
        }
        assert!(!status.contains(".SH FILES"), "only serve reads the files");
        assert!(
            diff.contains("The trees could not be compared"),
            "diff's own statuses"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_bash_zsh_and_fish_completions() {
        let dir = scratch("completions");
        write_completions(&dir).unwrap();
        let bash = fs::read_to_string(dir.join(BIN)).unwrap();
        let zsh = fs::read_to_string(dir.join(format!("_{BIN}"))).unwrap();
        let fish = fs::read_to_string(dir.join(format!("{BIN}.fish"))).unwrap();
        for script in [&bash, &zsh, &fish] {
            assert!(script.contains("diff"), "completes the diff subcommand");
            assert!(script.contains("upstream"), "completes record's options");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
