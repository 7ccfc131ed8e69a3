//! A speech-dispatcher output module that speaks without sound, for tests that need Orca to
//! wait on its voice the way it does for a listener.
//!
//! With speech made unavailable, Orca 43.1 and 48.1 run Say All as one synchronous loop to the
//! end of the document, so "Say All stops when asked" cannot be tested; Orca 51.1 reads one
//! piece and waits forever for it to be reported said. Through this module Orca
//! talks to a real speech-dispatcher: each message takes time to "say" (a fixed time per
//! character), is reported begun and ended (701 BEGIN, 702 END) or stopped (703 STOP) like a
//! synthesizer's, and Orca's Say All asks for the next piece only when the previous one ended.
//!
//! Every message it starts is appended, as plain text (SSML tags removed), to the log named in
//! its configuration file, one line per message, flushed at once: what a listener would have
//! heard, readable while Orca runs. A stopped message is followed by a line `[stopped]`.
//!
//! Configuration (the file speech-dispatcher passes as the first argument):
//!
//! ```text
//! VoiceLog /path/to/heard.log
//! MillisecondsPerCharacter 10
//! ```
//!
//! The protocol is speech-dispatcher's module protocol over stdin and stdout (0.11.4, as in
//! Debian 12, and later): `INIT`, `SET`/`AUDIO`/`LOGLEVEL` blocks ending in `.`, `SPEAK`/`CHAR`/
//! `KEY`/`SOUND_ICON` with the text ending in `.`, `STOP`, `PAUSE`, `LIST VOICES`, `QUIT`. It
//! declines the server's audio (`audio_output_method=server`), so the server expects no samples.

#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DEFAULT_MS_PER_CHAR: u64 = 10;

struct Config {
    log: Option<PathBuf>,
    per_char: Duration,
}

impl Config {
    fn read(path: Option<&str>) -> Config {
        let mut config = Config {
            log: None,
            per_char: Duration::from_millis(DEFAULT_MS_PER_CHAR),
        };
        let Some(text) = path.and_then(|p| std::fs::read_to_string(p).ok()) else {
            return config;
        };
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (Some("VoiceLog"), Some(path)) => config.log = Some(PathBuf::from(path)),
                (Some("MillisecondsPerCharacter"), Some(ms)) => {
                    if let Ok(ms) = ms.parse() {
                        config.per_char = Duration::from_millis(ms);
                    }
                }
                _ => {}
            }
        }
        config
    }
}

/// The module's replies and events share stdout; each is written whole.
#[derive(Clone)]
struct Replies(Arc<Mutex<std::io::Stdout>>);

impl Replies {
    fn send(&self, text: &str) {
        let Ok(mut out) = self.0.lock() else { return };
        let _ = out.write_all(text.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}

enum Order {
    Speak(String),
    Stop,
}

fn main() {
    let config = Config::read(std::env::args().nth(1).as_deref());
    let replies = Replies(Arc::new(Mutex::new(std::io::stdout())));
    let (orders, inbox) = mpsc::channel();
    let voice_replies = replies.clone();
    let voice = std::thread::spawn(move || speak_orders(inbox, voice_replies, config));
    serve(std::io::stdin().lock(), &replies, &orders);
    drop(orders);
    let _ = voice.join();
}

/// Reads the server's commands until `QUIT` or end of input.
fn serve(mut input: impl BufRead, replies: &Replies, orders: &mpsc::Sender<Order>) {
    while let Some(line) = read_line(&mut input) {
        match line.as_str() {
            "INIT" => {
                replies.send("299-newton-silent-voice: speaks without sound");
                replies.send("299 OK LOADED SUCCESSFULLY");
            }
            "SPEAK" | "CHAR" | "KEY" | "SOUND_ICON" => {
                replies.send("202 OK RECEIVING MESSAGE");
                let Some(text) = read_block(&mut input) else {
                    return;
                };
                let said = if line == "SPEAK" {
                    plain_text(&text)
                } else {
                    text
                };
                if said.is_empty() {
                    replies.send("301 ERROR CANT SPEAK");
                    continue;
                }
                replies.send("200 OK SPEAKING");
                let _ = orders.send(Order::Speak(said));
            }
            "STOP" | "PAUSE" => {
                let _ = orders.send(Order::Stop);
            }
            "SET" => settings(&mut input, replies, 203, "", "203 OK SETTINGS RECEIVED"),
            "AUDIO" => settings(
                &mut input,
                replies,
                207,
                "AUDIO ",
                "203 OK AUDIO INITIALIZED",
            ),
            "LOGLEVEL" => settings(&mut input, replies, 207, "LOGLEVEL ", "203 OK LOGLEVEL SET"),
            "QUIT" => {
                replies.send("210 OK QUIT");
                return;
            }
            other if other.starts_with("LIST VOICES") => {
                replies.send("200-silent\ten\tnone");
                replies.send("200 OK VOICE LIST SENT");
            }
            other if other.starts_with("DEBUG") => replies.send("200 OK DEBUGGING"),
            _ => replies.send("300 ERR UNKNOWN COMMAND"),
        }
    }
}

/// A settings block: acknowledged, read to its `.`, then answered. The server's own audio is
/// declined (303), so it falls back to leaving audio to the module, which plays none.
fn settings(input: &mut impl BufRead, replies: &Replies, ack: u32, kind: &str, done: &str) {
    replies.send(&format!("{ack} OK RECEIVING {kind}SETTINGS"));
    let Some(block) = read_block(input) else {
        return;
    };
    if block.lines().any(|l| l == "audio_output_method=server") {
        replies.send("303 ERROR INVALID PARAMETER OR VALUE");
    } else {
        replies.send(done);
    }
}

fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

/// Lines up to a lone `.`; a leading `.` doubled by the server is undone.
fn read_block(input: &mut impl BufRead) -> Option<String> {
    let mut lines = Vec::new();
    loop {
        let line = read_line(input)?;
        if line == "." {
            return Some(lines.join("\n"));
        }
        lines.push(line.strip_prefix('.').map_or(line.clone(), str::to_owned));
    }
}

/// What SSML says aloud: tags dropped, the five XML entities decoded, whitespace collapsed.
fn plain_text(ssml: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in ssml.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The voice: one message at a time, each taking its time unless a stop or a newer message
/// cuts it short.
fn speak_orders(inbox: Receiver<Order>, replies: Replies, config: Config) {
    let mut log = config
        .log
        .as_ref()
        .and_then(|path| OpenOptions::new().create(true).append(true).open(path).ok());
    let mut next = inbox.recv().ok();
    while let Some(order) = next.take() {
        let Order::Speak(text) = order else {
            next = inbox.recv().ok();
            continue;
        };
        write_log(&mut log, &text);
        replies.send("701 BEGIN");
        let length = u32::try_from(text.chars().count()).unwrap_or(u32::MAX);
        let ends = Instant::now() + config.per_char.saturating_mul(length);
        match wait_until(&inbox, ends) {
            Waited::Finished => replies.send("702 END"),
            Waited::Cut(order) => {
                write_log(&mut log, "[stopped]");
                replies.send("703 STOP");
                next = Some(order);
            }
            Waited::Closed => return,
        }
        if next.is_none() {
            next = inbox.recv().ok();
        }
    }
}

enum Waited {
    Finished,
    Cut(Order),
    Closed,
}

fn wait_until(inbox: &Receiver<Order>, ends: Instant) -> Waited {
    let left = ends.saturating_duration_since(Instant::now());
    match inbox.recv_timeout(left) {
        Ok(order) => Waited::Cut(order),
        Err(RecvTimeoutError::Timeout) => Waited::Finished,
        Err(RecvTimeoutError::Disconnected) => Waited::Closed,
    }
}

fn write_log(log: &mut Option<File>, line: &str) {
    if let Some(file) = log {
        let _ = writeln!(file, "{line}");
        let _ = file.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::{plain_text, serve, Order, Replies};
    use std::sync::{mpsc, Arc, Mutex};

    #[test]
    fn ssml_is_heard_as_its_words() {
        let ssml = "<speak><mark name=\"0:4\"/>Tom &amp; Jerry\n<mark name=\"5:9\"/>say &lt;hi&gt;</speak>";
        assert_eq!(plain_text(ssml), "Tom & Jerry say <hi>");
    }

    #[test]
    fn a_spoken_message_is_passed_to_the_voice_with_its_dots_undone() {
        let input = "INIT\nSPEAK\n<speak>one</speak>\n..two\n.\nSTOP\nQUIT\n";
        let (orders, inbox) = mpsc::channel();
        let replies = Replies(Arc::new(Mutex::new(std::io::stdout())));
        serve(input.as_bytes(), &replies, &orders);
        let received: Vec<String> = inbox
            .try_iter()
            .map(|o| match o {
                Order::Speak(text) => text,
                Order::Stop => "<stop>".to_owned(),
            })
            .collect();
        assert_eq!(received, ["one .two", "<stop>"]);
    }
}
