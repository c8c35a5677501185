//! Whatever the text, the tracefs reader, the replay planner and the
//! analyzer never panic: bad lines are errors (or counted), and whatever
//! parses is planned and analysed.

use elevator_trace::analyze::Analyzer;
use elevator_trace::replay::{Events, Planner};
use elevator_trace::tracefs::TracefsReader;
use elevator_trace::{Item, TraceError};
use proptest::prelude::*;

/// Pieces of real lines, so that random lines get deep into the parser.
const PIECES: [&str; 28] = [
    "postgres-19830 ",
    "<...>-1 ",
    "a b-c-7 ",
    "[000] ",
    "[1] ",
    "..... ",
    "1662.621853: ",
    "0.5: ",
    "block_bio_queue: ",
    "block_rq_issue: ",
    "block_rq_complete: ",
    "block_split: ",
    "block_unplug: ",
    "block_plug: ",
    "block_bio_backmerge: ",
    "block_rq_merge: ",
    "7,0 ",
    "W ",
    "FWFSM ",
    "FF ",
    "4096 ",
    "() ",
    "18446744073709551615 ",
    "+ ",
    "/ ",
    "8 ",
    "be,0,4 ",
    "[postgres] ",
];

fn run(text: &[u8], skip_bad: bool) {
    for events in [Events::Queued, Events::Issued] {
        let reader = TracefsReader::new(text, "fuzz", skip_bad);
        let mut analyzer = Analyzer::new();
        let items = reader.inspect(|i: &Result<Item, TraceError>| {
            if let Ok(Item::Record(r)) = i {
                analyzer.record(r);
            }
        });
        let plan = Planner::new(items, events, None).window(16);
        for step in plan {
            if step.is_err() {
                break;
            }
        }
        let _ = analyzer.analysis();
    }
}

proptest! {
    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        run(&bytes, false);
        run(&bytes, true);
    }

    #[test]
    fn random_lines(lines in proptest::collection::vec(
        proptest::collection::vec(0..PIECES.len(), 0..14), 0..40)) {
        let mut text = String::new();
        for line in &lines {
            for &p in line {
                text.push_str(PIECES[p]);
            }
            text.push('\n');
        }
        run(text.as_bytes(), false);
        run(text.as_bytes(), true);
    }
}
