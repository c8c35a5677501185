//! From [`Item`]s to a [`JobFile`]: sections, `[global]` inheritance,
//! bookkeeping of options as written, and the checks across options when a
//! job is complete.
//!
//! `[global]` options are applied to a template [`JobSpec`]; every job
//! section starts as a copy of the template as it is at that header (so a
//! later `[global]` never reaches back to earlier jobs) and applies its own
//! options on top. Cross-option checks run when a job section ends and are
//! reported at its header line.
//!
//! Items come one at a time ([`Builder::item`]), as the text is read: what
//! a file costs is its jobs, not its lines. A section keeps each option it
//! sets once (its last value, where it was last set), so an option repeated
//! a million times costs what one costs; warnings past [`MAX_WARNINGS`] are
//! counted, not kept; and the jobs, with every `numjobs` clone counted,
//! stop at [`MAX_JOBS`], fio's limit.

use super::options::MAX_VALUE_BYTES;
use super::syntax::{Item, Kind};
use super::{JobError, JobFile, JobSpec, ZoneMode, options};

/// The most jobs a file may give, every `numjobs` clone counted: fio's
/// limit (its `REAL_MAX_JOBS`; fio stops with "maximum number of jobs
/// reached").
pub const MAX_JOBS: u32 = 4096;

/// Warnings kept; the rest are counted in one last warning.
pub const MAX_WARNINGS: usize = 100;

/// The section the next option belongs to.
enum Target {
    /// No section header yet.
    Nothing,
    /// A `[global]` section: options go to the template.
    Global,
    /// A job section being read.
    Job(Box<JobSpec>),
}

/// Options applied to every job of a file at the end of its section (the
/// command line's global options, which override the file's).
pub(super) type Overrides<'a> = &'a [Item];

/// Builds a [`JobFile`] from items given one at a time.
pub(super) struct Builder {
    template: JobSpec,
    global_options: Vec<(String, String)>,
    jobs: Vec<JobSpec>,
    /// Job clones so far (every job's `numjobs`).
    clones: u32,
    warnings: Vec<String>,
    /// Warnings past [`MAX_WARNINGS`], not kept.
    warnings_dropped: u64,
    target: Target,
    /// Options set in the current section so far, each once: (canonical,
    /// file, line where first set).
    in_section: Vec<(&'static str, String, usize)>,
    path: String,
    /// The file of the current job's header: jobs named on the command
    /// line take the overrides as defaults instead.
    job_file: String,
    /// The next job section is the first of a job file after the first:
    /// it gets a `stonewall`, as fio separates job files.
    stonewall_next: bool,
}

/// Set `key` to `value` in a list of options as written, keeping each key
/// once: an earlier entry goes, the new one is last.
fn record<K, V>(list: &mut Vec<(K::Owned, V)>, key: &K, value: V)
where
    K: PartialEq + ToOwned + ?Sized,
    K::Owned: std::borrow::Borrow<K>,
{
    use std::borrow::Borrow;
    list.retain(|(k, _)| k.borrow() != key);
    list.push((key.to_owned(), value));
}

impl Builder {
    /// A builder for the file at `path` (its name as a whole, for errors).
    pub(super) fn new(path: &str) -> Builder {
        Builder {
            template: JobSpec::new("", 0),
            global_options: Vec::new(),
            jobs: Vec::new(),
            clones: 0,
            warnings: Vec::new(),
            warnings_dropped: 0,
            target: Target::Nothing,
            in_section: Vec::new(),
            path: path.to_string(),
            job_file: String::new(),
            stonewall_next: false,
        }
    }

    /// The end of one job file and the start of the next, read in the same
    /// run: the last section ends, the next file starts from fio's
    /// defaults (no `[global]` of the last reaches it), and its first job
    /// waits for every job before it.
    pub(super) fn next_file(&mut self, overrides: Overrides<'_>) -> Result<(), JobError> {
        self.finish_section(overrides)?;
        self.template = JobSpec::new("", 0);
        self.global_options.clear();
        self.stonewall_next = true;
        Ok(())
    }

    /// The jobs, once every item was given.
    pub(super) fn finish(mut self, overrides: Overrides<'_>) -> Result<JobFile, JobError> {
        self.finish_section(overrides)?;
        if self.jobs.is_empty() {
            let message = if self.path == super::cmdline::COMMAND_LINE {
                "no jobs: start one with --name=JOB".to_string()
            } else {
                "no jobs: add a [name] section after [global]".to_string()
            };
            return Err(JobError {
                file: self.path,
                line: 0,
                option: None,
                message,
            });
        }
        if self.warnings_dropped > 0 {
            self.warnings.push(format!(
                "{}: {} more warnings like these, not shown",
                self.path, self.warnings_dropped
            ));
        }
        Ok(JobFile {
            path: self.path,
            global_options: self.global_options,
            jobs: self.jobs,
            warnings: self.warnings,
        })
    }

    /// Take the next item of the file (or command line).
    pub(super) fn item(&mut self, item: &Item, overrides: Overrides<'_>) -> Result<(), JobError> {
        match &item.kind {
            Kind::Section(name) => {
                self.finish_section(overrides)?;
                self.target = if name == "global" {
                    Target::Global
                } else {
                    let mut job = self.template.clone();
                    job.name.clone_from(name);
                    job.line = item.line;
                    job.options.clear();
                    // A job of one of several files, or named on the
                    // command line after a file, knows where it is.
                    job.file = (item.file != self.path).then(|| item.file.clone());
                    if std::mem::take(&mut self.stonewall_next) {
                        job.stonewall = true;
                    }
                    self.job_file.clone_from(&item.file);
                    Target::Job(Box::new(job))
                };
                Ok(())
            }
            Kind::Option { name, value } => self.option(item, name, value.as_deref()),
        }
    }

    fn option(&mut self, item: &Item, name: &str, value: Option<&str>) -> Result<(), JobError> {
        let fail = |message: String| JobError {
            file: item.file.clone(),
            line: item.line,
            option: Some(name.to_string()),
            message,
        };
        let spec = match &mut self.target {
            Target::Nothing => {
                return Err(fail(
                    "option before any [section]: put it under [global] or a job".into(),
                ));
            }
            Target::Global => &mut self.template,
            Target::Job(job) => job,
        };
        let key = options::apply(spec, name, value).map_err(fail)?;
        record(&mut spec.option_lines, key, item.line);
        let value = value.unwrap_or("").to_string();
        if let Some((_, file, first)) = self.in_section.iter().find(|(k, ..)| *k == key) {
            let section = match &self.target {
                Target::Job(job) => job.name.as_str(),
                _ => "global",
            };
            let what = if key == name {
                format!("option '{name}' is set again")
            } else {
                format!("option '{name}' sets '{key}' again")
            };
            let at = if *file == item.file {
                format!("line {first}")
            } else {
                format!("{file}:{first}")
            };
            if self.warnings.len() < MAX_WARNINGS {
                self.warnings.push(format!(
                    "{}:{}: {what} in section [{section}] (first at {at}); the value on line {} \
                     is used, as fio does",
                    item.file, item.line, item.line
                ));
            } else {
                self.warnings_dropped += 1;
            }
        } else {
            self.in_section.push((key, item.file.clone(), item.line));
        }
        match &mut self.target {
            Target::Global => record(&mut self.global_options, name, value),
            Target::Job(job) => record(&mut job.options, name, value),
            Target::Nothing => {}
        }
        Ok(())
    }

    /// Close the current section: a job gets the overrides and its checks.
    fn finish_section(&mut self, overrides: Overrides<'_>) -> Result<(), JobError> {
        self.in_section.clear();
        let Target::Job(mut job) = std::mem::replace(&mut self.target, Target::Nothing) else {
            return Ok(());
        };
        let overrides = if self.job_file == super::cmdline::COMMAND_LINE {
            &[]
        } else {
            overrides
        };
        for o in overrides {
            if let Kind::Option { name, value } = &o.kind {
                let key = options::apply(&mut job, name, value.as_deref()).map_err(|message| {
                    JobError {
                        file: o.file.clone(),
                        line: o.line,
                        option: Some(name.clone()),
                        message,
                    }
                })?;
                record(&mut job.option_lines, key, o.line);
                record(
                    &mut job.options,
                    name.as_str(),
                    value.clone().unwrap_or_default(),
                );
            }
        }
        // In a file, errors about the whole job point at its header; on the
        // command line, at the argument that gave the option (else the
        // job's --name).
        let on_command_line = self.job_file == super::cmdline::COMMAND_LINE;
        let line_of = |job: &JobSpec, option: Option<&str>| match option {
            Some(o) if on_command_line => job.line_of(&[o]),
            _ => job.line,
        };
        self.clones = self.clones.saturating_add(job.numjobs);
        if self.clones > MAX_JOBS {
            let option = (job.numjobs > 1).then_some("numjobs");
            return Err(JobError {
                file: self.job_file.clone(),
                line: line_of(&job, option),
                option: option.map(str::to_string),
                message: format!(
                    "job '{}' makes {} jobs, more than fio's limit of {MAX_JOBS} (every \
                     numjobs clone counts)",
                    job.name, self.clones
                ),
            });
        }
        finish(&mut job, &self.jobs).map_err(|(option, message)| JobError {
            file: self.job_file.clone(),
            line: line_of(&job, option),
            option: option.map(str::to_string),
            message,
        })?;
        self.jobs.push(*job);
        Ok(())
    }
}

/// Fill what depends on the whole job and check across options, as fio
/// does (and elevator's own rules).
fn finish(job: &mut JobSpec, earlier: &[JobSpec]) -> Result<(), (Option<&'static str>, String)> {
    let name = job.name.clone();
    for log in [
        &mut job.write_bw_log,
        &mut job.write_lat_log,
        &mut job.write_iops_log,
    ] {
        if log.as_deref() == Some("") {
            *log = Some(name.clone());
        }
    }
    if let Some(format) = &job.filename_format {
        // `$jobname` repeated in the format makes each file's name that
        // many copies of the job's: bounded as one value is.
        let long = format.len() + format.matches("$jobname").count() * name.len();
        if long > MAX_VALUE_BYTES {
            let message = format!(
                "job '{}': its files' names would be about {long} bytes long: at most \
                 {MAX_VALUE_BYTES} (PATH_MAX)",
                name
            );
            return Err((Some("filename_format"), message));
        }
    }
    if job.time_based && job.runtime.is_none() {
        let message = format!("job '{name}': time_based needs a runtime greater than 0");
        return Err((Some("time_based"), message));
    }
    if job.zonemode == ZoneMode::None && job.zonesize > 0 {
        let message = format!(
            "job '{name}': zonesize needs zonemode=strided (fio: --zonemode=none and \
             --zonesize are not compatible)"
        );
        return Err((Some("zonesize"), message));
    }
    if job.zonemode == ZoneMode::Strided && job.zonesize == 0 {
        let message = format!("job '{name}': zonemode=strided needs a zonesize");
        return Err((Some("zonemode"), message));
    }
    if job.zonemode == ZoneMode::Strided && job.zonerange == 0 {
        job.zonerange = job.zonesize;
    }
    for d in 0..3 {
        let dir = ["reads", "writes", "trims"][d];
        if job.rate[d] > 0 && job.rate_iops[d] > 0 {
            let message =
                format!("job '{name}': rate and rate_iops are mutually exclusive (for {dir})");
            return Err((Some("rate_iops"), message));
        }
        if job.rate[d] > 0 && job.rate_min[d] > job.rate[d] {
            let message = format!("job '{name}': rate_min exceeds rate (for {dir})");
            return Err((Some("rate_min"), message));
        }
        if job.rate_iops[d] > 0 && job.rate_iops_min[d] > job.rate_iops[d] {
            let message = format!("job '{name}': rate_iops_min exceeds rate_iops (for {dir})");
            return Err((Some("rate_iops_min"), message));
        }
    }
    if let Some(waitee) = &job.wait_for
        && !earlier.iter().any(|j| &j.name == waitee)
    {
        let message = format!(
            "job '{name}': wait_for names '{waitee}', which is not an earlier job of the file"
        );
        return Err((Some("wait_for"), message));
    }
    Ok(())
}
