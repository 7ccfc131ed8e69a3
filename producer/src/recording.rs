//! Recorded streams: JSON lines of [`RecordedLine`], the hello first, then
//! one sender message per line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use newton_push_protocol::RecordedLine;
use thiserror::Error;

/// A recording that cannot be read or written.
#[derive(Debug, Error)]
pub enum RecordingError {
    /// The file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A line is not a valid recorded line.
    #[error("{}:{line}: {reason}", path.display())]
    Line {
        /// The file (`-` when parsed from a reader).
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The recording has no lines at all.
    #[error("{}: the recording is empty; its first line must be the hello", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// Reads a recording file, checking every line.
pub fn load_recording(path: impl AsRef<Path>) -> Result<Vec<RecordedLine>, RecordingError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| RecordingError::Io {
        path: path.to_owned(),
        source,
    })?;
    read_lines(BufReader::new(file), path)
}

/// Reads a recording from any reader (errors name the path `-`).
pub fn parse_recording(reader: impl BufRead) -> Result<Vec<RecordedLine>, RecordingError> {
    read_lines(reader, Path::new("-"))
}

fn read_lines(reader: impl BufRead, path: &Path) -> Result<Vec<RecordedLine>, RecordingError> {
    let mut lines = Vec::new();
    for (index, text) in reader.lines().enumerate() {
        let text = text.map_err(|source| RecordingError::Io {
            path: path.to_owned(),
            source,
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let line = parse_line(&text, lines.is_empty()).map_err(|reason| RecordingError::Line {
            path: path.to_owned(),
            line: index + 1,
            reason,
        })?;
        lines.push(line);
    }
    if lines.is_empty() {
        return Err(RecordingError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(lines)
}

/// Parses one line; `first` says whether it must be the hello.
fn parse_line(text: &str, first: bool) -> Result<RecordedLine, String> {
    let line: RecordedLine =
        serde_json::from_str(text).map_err(|error| format!("not a recorded line: {error}"))?;
    match (&line.hello, &line.message, first) {
        (Some(_), None, true) | (None, Some(_), false) => Ok(line),
        (Some(_), Some(_), _) => Err("a line carries either `hello` or `message`, not both".into()),
        (None, None, _) => Err("the line has neither `hello` nor `message`".into()),
        (None, Some(_), true) => Err("the first line must be the hello".into()),
        (Some(_), None, false) => Err("only the first line may be a hello".into()),
    }
}

/// Writes a recording file (one JSON object per line).
pub fn write_recording(
    path: impl AsRef<Path>,
    lines: &[RecordedLine],
) -> Result<(), RecordingError> {
    let path = path.as_ref();
    let io_error = |source| RecordingError::Io {
        path: path.to_owned(),
        source,
    };
    let mut writer = BufWriter::new(File::create(path).map_err(io_error)?);
    for line in lines {
        write_recorded_line(&mut writer, line).map_err(io_error)?;
    }
    writer.flush().map_err(io_error)
}

/// Appends one recorded line (JSON plus newline) to a writer; for
/// recorders that write as they go.
pub fn write_recorded_line(writer: &mut impl Write, line: &RecordedLine) -> io::Result<()> {
    serde_json::to_writer(&mut *writer, line)?;
    writer.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use newton_push_protocol::{AppInfo, Encoding, Hello, SenderMessage, SurfaceId};

    fn sample() -> Vec<RecordedLine> {
        let hello = Hello {
            protocol: 1,
            encoding: Encoding::Json,
            app: AppInfo {
                app_id: "a".into(),
                name: "A".into(),
                ..Default::default()
            },
            accesskit_version: None,
        };
        vec![
            RecordedLine {
                at_ms: 0,
                hello: Some(hello),
                message: None,
            },
            RecordedLine {
                at_ms: 5,
                hello: None,
                message: Some(SenderMessage::CreateSurface {
                    surface: SurfaceId(1),
                    title: None,
                }),
            },
            RecordedLine {
                at_ms: 9,
                hello: None,
                message: Some(SenderMessage::Goodbye),
            },
        ]
    }

    #[test]
    fn round_trips_through_a_buffer() {
        let mut bytes = Vec::new();
        for line in sample() {
            write_recorded_line(&mut bytes, &line).unwrap();
        }
        assert_eq!(parse_recording(bytes.as_slice()).unwrap(), sample());
    }

    #[test]
    fn round_trips_through_a_file() {
        let path =
            std::env::temp_dir().join(format!("newton-producer-rec-{}.jsonl", std::process::id()));
        write_recording(&path, &sample()).unwrap();
        let loaded = load_recording(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(loaded.unwrap(), sample());
    }

    #[test]
    fn bad_line_reports_its_number() {
        let mut bytes = Vec::new();
        write_recorded_line(&mut bytes, &sample()[0]).unwrap();
        bytes.extend(b"\n{\"atMs\": 3, \"message\": {\"explode\": 1}}\n");
        let error = parse_recording(bytes.as_slice()).unwrap_err();
        assert!(
            matches!(error, RecordingError::Line { line: 3, .. }),
            "{error}"
        );
        assert!(
            error.to_string().starts_with("-:3: not a recorded line"),
            "{error}"
        );
    }

    #[test]
    fn structure_rules_are_checked() {
        let message_first = "{\"atMs\":0,\"message\":\"goodbye\"}\n";
        let error = parse_recording(message_first.as_bytes()).unwrap_err();
        assert!(
            error.to_string().contains("first line must be the hello"),
            "{error}"
        );
        let error = parse_recording("\n\n".as_bytes()).unwrap_err();
        assert!(matches!(error, RecordingError::Empty { .. }), "{error}");
        let mut two_hellos = Vec::new();
        write_recorded_line(&mut two_hellos, &sample()[0]).unwrap();
        write_recorded_line(&mut two_hellos, &sample()[0]).unwrap();
        let error = parse_recording(two_hellos.as_slice()).unwrap_err();
        assert!(
            matches!(error, RecordingError::Line { line: 2, .. }),
            "{error}"
        );
    }

    #[test]
    fn missing_file_names_the_path() {
        let error = load_recording("/nonexistent/newton.jsonl").unwrap_err();
        assert!(
            error.to_string().starts_with("/nonexistent/newton.jsonl:"),
            "{error}"
        );
    }
}
