//! Configuration files the daemon reads itself, so every way of starting it
//! (the systemd unit, the XDG autostart entry, D-Bus activation, a shell)
//! sees the same settings.
//!
//! Two files, both optional, in the order they are read:
//! `/etc/newton-atspi-bridge/bridge.conf` (the system's) and
//! `$XDG_CONFIG_HOME/newton-atspi-bridge/bridge.conf` (the user's;
//! `~/.config/…` when `XDG_CONFIG_HOME` is unset). Precedence, highest first:
//! command line, environment, user file, system file, built-in default.
//!
//! Format: one `key = value` per line; blank lines and lines starting with
//! `#` are ignored; no quoting (the value is everything after the first `=`,
//! trimmed). A key is the long option of `serve` without its dashes; the
//! settable keys are exactly the options that have a `NEWTON_ATSPI_*`
//! environment variable (the socket path is not one: senders find it through
//! `NEWTON_ATSPI_SOCKET`, so it must come from the environment they share).
//! List options take the environment variable's separator
//! (`allow-exe = /usr/bin/a:/usr/bin/b`); an empty value clears a list the
//! system file set. A key given twice in one file, an unknown key or an
//! invalid value is an error naming the file and line: the daemon refuses to
//! start with a half-applied configuration.
//!
//! The values become clap defaults of the `serve` command (user file over
//! system file), so clap's own order — command line, then environment, then
//! default — gives the documented precedence, and every value goes through
//! the same parser as on the command line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The file's name, in both directories.
pub const FILE_NAME: &str = "bridge.conf";
/// The system-wide directory.
pub const SYSTEM_DIR: &str = "/etc/newton-atspi-bridge";
/// The directory under `$XDG_CONFIG_HOME` (or `~/.config`).
pub const USER_SUBDIR: &str = "newton-atspi-bridge";
/// Only options with an environment variable of this prefix are settable.
const ENV_PREFIX: &str = "NEWTON_ATSPI_";
/// The subcommand the files configure (a bare `newton-atspi-bridge` runs it).
pub const CONFIGURED_SUBCOMMAND: &str = "serve";

/// Where a setting was read: file and 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub path: PathBuf,
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// One `key = value` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub value: String,
    pub origin: Origin,
}

/// The merged files: for each key, the value from the file read last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    settings: BTreeMap<String, Setting>,
    /// Files that existed and were read, in reading order.
    pub files_read: Vec<PathBuf>,
}

/// A configuration file that cannot be used; the message says which file,
/// which line and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: expected `key = value` (or a `#` comment), found {text:?}")]
    Syntax { origin: Origin, text: String },
    #[error("{origin}: `{key}` is already set on line {first} of this file; keep one of them")]
    Duplicate {
        origin: Origin,
        key: String,
        first: usize,
    },
    #[error("{origin}: unknown setting `{key}`; the settings are: {known}")]
    Unknown {
        origin: Origin,
        key: String,
        known: String,
    },
    #[error("{origin}: invalid value for `{key}`: {message}")]
    Invalid {
        origin: Origin,
        key: String,
        message: String,
    },
}

/// The files to read, lowest priority first: the system file, then the
/// user's (when a config home can be determined).
pub fn default_paths() -> Vec<PathBuf> {
    let mut paths = vec![Path::new(SYSTEM_DIR).join(FILE_NAME)];
    if let Some(home) = user_config_home() {
        paths.push(home.join(USER_SUBDIR).join(FILE_NAME));
    }
    paths
}

/// `$XDG_CONFIG_HOME`, else `$HOME/.config`; relative values are ignored,
/// as the XDG base directory specification says.
fn user_config_home() -> Option<PathBuf> {
    let absolute = |value: std::ffi::OsString| {
        let path = PathBuf::from(value);
        path.is_absolute().then_some(path)
    };
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|home| home.join(".config"))
        })
}

impl Config {
    /// Reads `paths` in order (later files override earlier ones key by
    /// key). A missing file is skipped; an unreadable one is an error.
    pub fn load(paths: &[PathBuf]) -> Result<Self, ConfigError> {
        let mut config = Config::default();
        for path in paths {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(ConfigError::Read {
                        path: path.clone(),
                        source,
                    })
                }
            };
            config.settings.extend(parse(path, &text)?);
            config.files_read.push(path.clone());
        }
        Ok(config)
    }

    /// The setting for `key`, if a file set it.
    pub fn get(&self, key: &str) -> Option<&Setting> {
        self.settings.get(key)
    }

    /// Makes each file value the default of its option in `command` (the
    /// whole CLI definition), after checking it with the option's own value
    /// parser. Unknown keys and invalid values are errors.
    pub fn apply(&self, command: clap::Command) -> Result<clap::Command, ConfigError> {
        // Not built: building copies global options into subcommands, and a
        // default changed afterwards would not reach those copies.
        let mut command = command;
        let known = settable(&command);
        for (key, setting) in &self.settings {
            let Some(place) = known.iter().find(|s| s.key == *key) else {
                return Err(ConfigError::Unknown {
                    origin: setting.origin.clone(),
                    key: key.clone(),
                    known: known
                        .iter()
                        .map(|s| s.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            let values = checked_values(&command, place, key, setting)?;
            let id = place.id.clone();
            let set_default = move |arg: clap::Arg| arg.default_values(values.clone());
            command = match place.on_subcommand {
                true => command.mut_subcommand(CONFIGURED_SUBCOMMAND, |sub| {
                    sub.mut_arg(id.as_str(), set_default)
                }),
                false => command.mut_arg(id.as_str(), set_default),
            };
        }
        Ok(command)
    }
}

/// An option a file may set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settable {
    /// The file key: the long option without dashes.
    pub key: String,
    /// The clap argument id.
    pub id: String,
    /// Its environment variable.
    pub env: String,
    /// The help line, for the man page.
    pub help: String,
    /// Defined on `serve` (else a global option of the whole command).
    pub on_subcommand: bool,
    /// The list separator, for options that take several values.
    pub delimiter: Option<char>,
}

/// Every option a file may set: the global options and those of `serve`
/// that have a `NEWTON_ATSPI_*` environment variable, in definition order.
pub fn settable(command: &clap::Command) -> Vec<Settable> {
    let of = |cmd: &clap::Command, on_subcommand: bool| -> Vec<Settable> {
        cmd.get_arguments()
            .filter(|arg| on_subcommand || arg.is_global_set())
            .filter_map(|arg| {
                let env = arg.get_env()?.to_str()?;
                let key = arg.get_long()?;
                env.starts_with(ENV_PREFIX).then(|| Settable {
                    key: key.to_owned(),
                    id: arg.get_id().to_string(),
                    env: env.to_owned(),
                    help: arg.get_help().map(|h| h.to_string()).unwrap_or_default(),
                    on_subcommand,
                    delimiter: arg.get_value_delimiter(),
                })
            })
            .collect()
    };
    let mut all = of(command, false);
    if let Some(serve) = command.find_subcommand(CONFIGURED_SUBCOMMAND) {
        for setting in of(serve, true) {
            // Globals propagate into subcommands once built; list them once.
            if !all.iter().any(|s| s.id == setting.id) {
                all.push(setting);
            }
        }
    }
    all
}

/// The file value split as the option's environment variable would be,
/// each piece checked with the option's value parser.
fn checked_values(
    command: &clap::Command,
    place: &Settable,
    key: &str,
    setting: &Setting,
) -> Result<Vec<String>, ConfigError> {
    let owner = match place.on_subcommand {
        true => command
            .find_subcommand(CONFIGURED_SUBCOMMAND)
            .unwrap_or(command),
        false => command,
    };
    let invalid = |message: String| ConfigError::Invalid {
        origin: setting.origin.clone(),
        key: key.to_owned(),
        message,
    };
    let Some(arg) = owner
        .get_arguments()
        .find(|a| a.get_id().as_str() == place.id)
    else {
        return Err(invalid("the option is not defined".to_owned()));
    };
    let pieces: Vec<String> = match arg.get_value_delimiter() {
        Some(_) if setting.value.is_empty() => return Ok(Vec::new()),
        Some(delimiter) => setting.value.split(delimiter).map(str::to_owned).collect(),
        None => vec![setting.value.clone()],
    };
    // The option alone in a scratch command: its parser, range and
    // delimiter check the value exactly as on the command line.
    let alone = clap::Command::new(key.to_owned())
        .no_binary_name(true)
        .arg(arg.clone().required(false).env(None::<&str>));
    alone
        .try_get_matches_from([format!("--{key}={}", setting.value)])
        .map_err(|e| invalid(clap_message(&e)))?;
    Ok(pieces)
}

/// clap's error without its "error: " prefix and "try --help" footer.
fn clap_message(error: &clap::Error) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// Parses one file's text.
fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, Setting>, ConfigError> {
    let mut settings: BTreeMap<String, Setting> = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let origin = Origin {
            path: path.to_owned(),
            line: index + 1,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ConfigError::Syntax {
                origin,
                text: line.to_owned(),
            });
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(ConfigError::Syntax {
                origin,
                text: line.to_owned(),
            });
        }
        if let Some(first) = settings.get(key) {
            return Err(ConfigError::Duplicate {
                key: key.to_owned(),
                first: first.origin.line,
                origin,
            });
        }
        settings.insert(
            key.to_owned(),
            Setting {
                value: value.trim().to_owned(),
                origin,
            },
        );
    }
    Ok(settings)
}

/// The settings `serve` would use, as a configuration file with each
/// value's source in a comment above it (for `serve --print-config`).
///
/// `command` is the whole CLI definition as declared, before
/// [`Config::apply`]: definition order, since the applied command has its
/// changed options last.
pub fn describe(mut command: clap::Command, matches: &clap::ArgMatches, config: &Config) -> String {
    command.build();
    let serve = matches
        .subcommand_matches(CONFIGURED_SUBCOMMAND)
        .unwrap_or(matches);
    let files = match config.files_read.as_slice() {
        [] => "none".to_owned(),
        read => read
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut text = format!(
        "# Settings of `newton-atspi-bridge serve`; precedence: command line, environment,\n\
         # user file, system file, built-in default. Configuration files read: {files}\n"
    );
    for setting in settable(&command) {
        let values: Vec<String> = serve
            .get_raw(&setting.id)
            .map(|raw| raw.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let separator = setting.delimiter.map(String::from).unwrap_or_default();
        let source =
            source_of(serve, config, &setting).unwrap_or_else(|| "built-in default".to_owned());
        text.push_str(&format!(
            "# {source}\n{} = {}\n",
            setting.key,
            values.join(&separator)
        ));
    }
    text
}

/// Where the value `serve` uses for `setting` came from.
fn source_of(matches: &clap::ArgMatches, config: &Config, setting: &Settable) -> Option<String> {
    use clap::parser::ValueSource;
    match matches.value_source(&setting.id)? {
        ValueSource::CommandLine => Some("command line".to_owned()),
        ValueSource::EnvVariable => Some(format!("environment ({})", setting.env)),
        ValueSource::DefaultValue => Some(match config.get(&setting.key) {
            Some(from_file) => from_file.origin.to_string(),
            None => "built-in default".to_owned(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServeArgs;
    use clap::{CommandFactory, FromArgMatches};

    /// The installed CLI's shape (tools/src/cli.rs): a global log level
    /// with its `NEWTON_ATSPI_LOG` variable and `serve` taking [`ServeArgs`].
    #[derive(Debug, clap::Parser)]
    #[command(name = "newton-atspi-bridge")]
    struct Cli {
        #[arg(long, global = true, default_value = "info", env = "NEWTON_ATSPI_LOG")]
        log_level: String,
        #[command(subcommand)]
        command: Option<Command>,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Command {
        Serve(ServeArgs),
    }

    fn cli_command() -> clap::Command {
        Cli::command()
    }

    /// A scratch directory with `system.conf` and `user.conf`.
    struct Files {
        dir: PathBuf,
    }

    impl Files {
        fn new(name: &str, system: &str, user: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("newton-config-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("system.conf"), system).unwrap();
            std::fs::write(dir.join("user.conf"), user).unwrap();
            Files { dir }
        }
        fn paths(&self) -> Vec<PathBuf> {
            vec![self.dir.join("system.conf"), self.dir.join("user.conf")]
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// `serve` parsed from `args` with the files applied. The options used
    /// here (max-depth, fps-burst, max-queued-bytes, allow-uid) are set in
    /// no test's environment, so only files and arguments decide.
    fn serve(files: &Files, args: &[&str]) -> Result<ServeArgs, ConfigError> {
        let config = Config::load(&files.paths())?;
        let command = config.apply(cli_command())?;
        let mut argv = vec!["newton-atspi-bridge", "serve"];
        argv.extend_from_slice(args);
        let matches = command.try_get_matches_from(argv).unwrap();
        match Cli::from_arg_matches(&matches).unwrap().command {
            Some(Command::Serve(args)) => Ok(args),
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn user_file_overrides_system_file_key_by_key() {
        let files = Files::new(
            "layers",
            "# the system's\nmax-depth = 10\nfps-burst = 7\n",
            "max-depth=20\n",
        );
        let args = serve(&files, &[]).unwrap();
        assert_eq!(args.max_depth, 20, "user file wins over system file");
        assert_eq!(
            args.fps_burst, 7,
            "system file still applies where the user is silent"
        );
        assert_eq!(
            args.max_queued_bytes,
            newton_push_protocol::DEFAULT_MAX_QUEUED_BYTES,
            "built-in default when no file sets it"
        );
    }

    #[test]
    fn the_command_line_overrides_both_files() {
        let files = Files::new("cli", "max-depth = 10\n", "max-depth = 20\n");
        let args = serve(&files, &["--max-depth", "30"]).unwrap();
        assert_eq!(args.max_depth, 30);
    }

    #[test]
    fn lists_use_the_environment_separator_and_an_empty_value_clears_them() {
        let files = Files::new("lists", "allow-uid = 0,42\n", "");
        assert_eq!(serve(&files, &[]).unwrap().allow_uid, vec![0, 42]);
        let files = Files::new("clear", "allow-uid = 0,42\n", "allow-uid =\n");
        assert_eq!(serve(&files, &[]).unwrap().allow_uid, Vec::<u32>::new());
    }

    #[test]
    fn missing_files_are_skipped() {
        let dir = std::env::temp_dir().join(format!("newton-config-none-{}", std::process::id()));
        let config = Config::load(&[dir.join("absent.conf")]).unwrap();
        assert!(config.files_read.is_empty());
        assert_eq!(config, Config::default());
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_problem() {
        let cases = [
            ("max-depth 3\n", 1, "expected `key = value`"),
            (
                "\n# c\nmax-depth = 3\nmax-depth = 4\n",
                4,
                "already set on line 3",
            ),
            ("max-dept = 3\n", 1, "unknown setting `max-dept`"),
            ("socket = /tmp/x\n", 1, "unknown setting `socket`"),
            ("max-depth = lots\n", 1, "invalid value for `max-depth`"),
            ("fps-burst = 0\n", 1, "invalid value for `fps-burst`"),
            ("allow-uid = 0,root\n", 1, "invalid value for `allow-uid`"),
        ];
        for (user, line, problem) in cases {
            let files = Files::new("errors", "", user);
            let error = serve(&files, &[]).unwrap_err().to_string();
            assert!(
                error.contains(&format!("user.conf:{line}: ")),
                "{user:?}: {error}"
            );
            assert!(error.contains(problem), "{user:?}: {error}");
        }
        let files = Files::new("unknown", "", "nodes = 3\n");
        let error = serve(&files, &[]).unwrap_err().to_string();
        assert!(
            error.contains("max-nodes") && error.contains("log-level"),
            "lists the known keys: {error}"
        );
    }

    #[test]
    fn every_limit_is_settable_and_has_an_environment_variable() {
        let mut command = cli_command();
        command.build();
        let keys: Vec<String> = settable(&command).into_iter().map(|s| s.key).collect();
        for key in [
            "log-level",
            "max-frame-bytes",
            "max-nodes",
            "max-depth",
            "max-fps",
            "fps-burst",
            "max-queued-bytes",
            "allow-exe",
            "allow-uid",
        ] {
            assert!(keys.iter().any(|k| k == key), "{key} missing from {keys:?}");
        }
        assert!(!keys.iter().any(|k| k == "socket" || k == "a11y-bus"));
    }

    #[test]
    fn the_log_level_is_a_global_setting() {
        let files = Files::new("log", "log-level = debug\n", "");
        let config = Config::load(&files.paths()).unwrap();
        let command = config.apply(cli_command()).unwrap();
        let matches = command
            .try_get_matches_from(["newton-atspi-bridge", "serve"])
            .unwrap();
        let cli = Cli::from_arg_matches(&matches).unwrap();
        // NEWTON_ATSPI_LOG is not set by the tests.
        if std::env::var_os("NEWTON_ATSPI_LOG").is_none() {
            assert_eq!(cli.log_level, "debug");
        }
    }
}
