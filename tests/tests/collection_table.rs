//! Collection, Table and TableCell as pyatspi sees them: replay doc-small and grid-small into
//! `newton-atspi-bridge serve`, run collection_query.py (Collection.getMatches / getMatchesFrom /
//! getMatchesTo with several match rules, Table and TableCell answers for every cell) and
//! compare with reviewed golden files in tests/golden/collection/ (NEWTON_UPDATE_GOLDENS=1
//! rewrites them; review the diff against fixtures/gen/src/doc.rs and table.rs).
//!
//! Needs the bridge binary: `cargo build -p newton-atspi-bridge` first.

use std::time::Duration;

/// The one query kept in its own goldens: TableCell.GetRowColumnSpan. xml/TableCell.xml declares
/// `(biiii)`, but libatspi (2.46 and current, `atspi_table_cell_get_row_column_span`: `"=>iiii"`)
/// and atk-bridge (`impl_GetRowColumnSpan`: four INT32) use `(iiii)`, which the shim replies; a
/// `(biiii)` reply makes every libatspi client fail with "returned signature biiii; expected
/// iiii". Its reviewed golden (`*-row-column-span.json`) holds the answers the fixtures define.
const ROW_COLUMN_SPAN_QUERY: &str = "TableCell getRowColumnSpan of every getAccessibleAt cell";

use newton_e2e::{check_golden, fixture, py_script, python, Bridge, SessionOptions, TestSession};
use serde_json::Value;

const QUERY_TIMEOUT: Duration = Duration::from_secs(90);

/// Replays `fixture_file`, runs collection_query.py `--kind kind` on `app_name` and returns its
/// answers (a JSON array of `{query, result}`).
fn run_queries(fixture_file: &str, app_name: &str, kind: &str) -> Vec<Value> {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let replay = bridge
        .replay_and_stay(&mut session, "replay", &fixture(fixture_file), app_name)
        .expect("replay the fixture");
    assert!(
        replay.summary.ends_with("; 0 rejected"),
        "replay had rejections: {}",
        replay.summary
    );

    let mut query = session.command(python());
    query
        .arg(py_script("collection_query.py"))
        .args(["--app", app_name, "--kind", kind]);
    let out = session
        .run_ok("collection-query", query, QUERY_TIMEOUT)
        .expect("collection_query.py succeeds");
    let answers: Value = serde_json::from_str(&out).expect("collection_query.py prints JSON");
    session
        .ensure_running(bridge.pid())
        .expect("bridge still running after the queries");
    session.stop(replay.pid, Duration::from_secs(10));
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
    answers
        .as_array()
        .cloned()
        .expect("collection_query.py prints a JSON array")
}

/// Splits the answers into (everything else, the GetRowColumnSpan answers).
fn split_row_column_span(answers: Vec<Value>) -> (Vec<Value>, Vec<Value>) {
    answers
        .into_iter()
        .partition(|entry| entry["query"] != ROW_COLUMN_SPAN_QUERY)
}

fn check(golden: &str, answers: Vec<Value>) {
    if let Err(e) = check_golden(&format!("collection/{golden}"), &Value::Array(answers)) {
        panic!("{e}");
    }
}

/// Every answer except GetRowColumnSpan matches tests/golden/collection/`golden`.json.
fn queries_match_golden(fixture_file: &str, app_name: &str, kind: &str, golden: &str) {
    let (main, _) = split_row_column_span(run_queries(fixture_file, app_name, kind));
    check(&format!("{golden}.json"), main);
}

/// The GetRowColumnSpan answers match tests/golden/collection/`golden`-row-column-span.json.
fn row_column_span_matches_golden(fixture_file: &str, app_name: &str, kind: &str, golden: &str) {
    let (_, spans) = split_row_column_span(run_queries(fixture_file, app_name, kind));
    check(&format!("{golden}-row-column-span.json"), spans);
}

#[test]
fn doc_small_collection_and_table_answers_match_golden() {
    queries_match_golden(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        "doc",
        "doc-small",
    );
}

#[test]
fn grid_small_table_answers_match_golden() {
    queries_match_golden(
        "generated-small/grid-small.jsonl",
        "Newton table",
        "grid",
        "grid-small",
    );
}

#[test]
fn doc_small_table_cell_row_column_span_matches_golden() {
    row_column_span_matches_golden(
        "generated-small/doc-small.jsonl",
        "Newton small document",
        "doc",
        "doc-small",
    );
}

#[test]
fn grid_small_table_cell_row_column_span_matches_golden() {
    row_column_span_matches_golden(
        "generated-small/grid-small.jsonl",
        "Newton table",
        "grid",
        "grid-small",
    );
}
