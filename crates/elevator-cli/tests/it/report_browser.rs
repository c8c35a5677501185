//! The report opens in a real browser: `elevator experiment all --quick`
//! writes `report.html`, and headless Chromium (Debian's package) loads it
//! inside a harness page whose script measures every plot (its size on the
//! page, its elements, the box its drawing covers, its text), logs to the
//! console, and writes what it found into the page, which Chromium dumps.
//! The test checks that every figure's SVG rendered with a non-empty
//! drawing, that the browser logged no error, and takes a screenshot.
//! Chromium missing fails the test, naming the package: nothing is skipped.

use std::process::Command;

use crate::common;
use common::fio::TempDir;
use common::ok;
use common::tools::run;

/// The harness: the report in a frame; when it has loaded, each `figure
/// svg` is measured and the results written to `<pre id="result">`.
const HARNESS: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>harness</title></head><body>
<iframe id="report" src="report.html" style="width:1000px;height:900px" onload="check()"></iframe>
<script>
function check() {
  var out = [];
  var d = document.getElementById('report').contentDocument;
  if (!d) { out.push('ERROR no access to the report'); }
  else {
    var figs = d.querySelectorAll('figure');
    var svgs = d.querySelectorAll('figure svg');
    out.push('FIGURES ' + figs.length + ' SVGS ' + svgs.length);
    for (var i = 0; i < svgs.length; i++) {
      var s = svgs[i];
      var r = s.getBoundingClientRect();
      var b = s.getBBox();
      var drawn = s.querySelectorAll('line,polyline,path,circle,rect,polygon').length;
      var texts = s.querySelectorAll('text').length;
      out.push(['PLOT', i, Math.round(r.width), Math.round(r.height), drawn, texts,
                Math.round(b.width), Math.round(b.height)].join(' '));
    }
  }
  var pre = document.createElement('pre');
  pre.id = 'result';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
  console.log('harness: checked ' + out.length + ' lines');
}
</script></body></html>
"#;

fn chromium(args: &[&str]) -> std::process::Output {
    run(Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args))
}

#[test]
fn every_plot_of_the_quick_report_renders_in_chromium() {
    elevator_testkit::needs!("chromium");
    let dir = TempDir::new("report-browser");
    let out = dir.file("report");
    ok(&["experiment", "all", "--quick", "--out", &out]);
    let report = dir.path().join("report/report.html");
    let html = std::fs::read_to_string(&report).expect("report.html written");
    assert!(
        html.len() < 2 << 20,
        "report.html is {} bytes, over 2 MiB",
        html.len()
    );
    for needle in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(
            !html.contains(needle),
            "the report fetches or runs something: {needle}"
        );
    }
    for name in [
        "merging",
        "direct-io",
        "deadline-cost",
        "lock-scaling",
        "cfq-idling",
    ] {
        for ext in ["txt", "json"] {
            let p = dir.path().join(format!("report/{name}.{ext}"));
            assert!(p.exists(), "{} not written", p.display());
        }
        assert!(
            html.contains(&format!("id=\"{name}\"")),
            "no section {name}"
        );
    }
    let figures = html.matches("<figure>").count();
    assert!(figures >= 15, "only {figures} figures in the report");

    let harness = dir.path().join("report/harness.html");
    std::fs::write(&harness, HARNESS).expect("write the harness");
    let url = format!("file://{}", harness.display());
    let shown = chromium(&[
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
        "--dump-dom",
        &url,
    ]);
    let dom = String::from_utf8_lossy(&shown.stdout);
    let log = String::from_utf8_lossy(&shown.stderr);
    let result = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_else(|| panic!("the harness wrote no result:\n{dom}\n{log}"));
    let lines: Vec<&str> = result.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some(format!("FIGURES {figures} SVGS {figures}").as_str()),
        "{result}"
    );
    let plots: Vec<Vec<i64>> = lines
        .iter()
        .filter(|l| l.starts_with("PLOT "))
        .map(|l| {
            l.split(' ')
                .skip(1)
                .map(|x| x.parse().expect("a number"))
                .collect()
        })
        .collect();
    assert_eq!(plots.len(), figures, "{result}");
    for p in &plots {
        let [i, w, h, drawn, texts, bw, bh] = p[..] else {
            panic!("bad line {p:?}")
        };
        assert!(
            w >= 300 && h >= 150,
            "plot {i} is {w}x{h} on the page: {result}"
        );
        assert!(drawn >= 10, "plot {i} drew only {drawn} shapes: {result}");
        assert!(
            texts >= 3,
            "plot {i} has {texts} texts (title, axes): {result}"
        );
        assert!(
            bw >= 200 && bh >= 100,
            "plot {i}'s drawing covers {bw}x{bh}: {result}"
        );
    }
    assert!(
        log.contains("harness: checked"),
        "the console log was not captured:\n{log}"
    );
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && !l.contains("harness: checked"))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console messages: {console_errors:#?}"
    );

    let png = dir.file("report.png");
    chromium(&[
        &format!("--screenshot={png}"),
        "--window-size=1000,2400",
        &format!("file://{}", report.display()),
    ]);
    let shot = std::fs::read(&png).expect("screenshot written");
    assert!(shot.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        shot.len() > 20_000,
        "a {}-byte screenshot is blank",
        shot.len()
    );
}
