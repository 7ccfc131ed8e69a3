//! The hidden `generate-manpages DIR` and `generate-completions DIR`
//! subcommands: packaging (the Makefile, cargo-deb) builds the man pages and
//! shell completions from the same clap definition the binary parses with,
//! so they never drift from `--help`.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use clap_complete::Shell;

use crate::cli;

/// The binary's name, as installed.
const BIN: &str = "newton-atspi-bridge";

/// Writes `newton-atspi-bridge.1` and one `newton-atspi-bridge-SUB.1` per
/// visible subcommand into `dir`.
pub fn write_manpages(dir: &Path) -> Result<(), Box<dyn Error>> {
    create_dir(dir)?;
    clap_mangen::generate_to(cli::command(), dir)
        .map_err(|e| format!("cannot write man pages into {}: {e}", dir.display()))?;
    println!("man pages written to {}", dir.display());
    Ok(())
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
