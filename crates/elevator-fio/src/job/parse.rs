//! From [`Item`]s to a [`JobFile`]: sections, `[global]` inheritance,
//! bookkeeping of options as written, and the checks across options when a
//! job is complete.
//!
//! `[global]` options are applied to a template [`JobSpec`]; every job
//! section starts as a copy of the template as it is at that header (so a
//! later `[global]` never reaches back to earlier jobs) and applies its own
//! options on top. Cross-option checks run when a job section ends and are
//! reported at its header line.

use super::syntax::{Item, Kind};
use super::{JobError, JobFile, JobSpec, ZoneMode, options};

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

/// Build the jobs of `items`; `path` names the file as a whole.
pub(super) fn assemble(
    items: &[Item],
    path: &str,
    overrides: Overrides<'_>,
) -> Result<JobFile, JobError> {
    let mut b = Builder {
        template: JobSpec::new("", 0),
        global_options: Vec::new(),
        jobs: Vec::new(),
        warnings: Vec::new(),
        target: Target::Nothing,
        in_section: Vec::new(),
        path: path.to_string(),
        job_file: String::new(),
    };
    for item in items {
        b.item(item, overrides)?;
    }
    b.finish_section(overrides)?;
    if b.jobs.is_empty() {
        let message = "no jobs: add a [name] section after [global]".to_string();
        return Err(JobError {
            file: path.to_string(),
            line: 0,
            option: None,
            message,
        });
    }
    Ok(JobFile {
        path: path.to_string(),
        global_options: b.global_options,
        jobs: b.jobs,
        warnings: b.warnings,
    })
}

struct Builder {
    template: JobSpec,
    global_options: Vec<(String, String)>,
    jobs: Vec<JobSpec>,
    warnings: Vec<String>,
    target: Target,
    /// Options set in the current section so far: (canonical, file, line).
    in_section: Vec<(&'static str, String, usize)>,
    path: String,
    /// The file of the current job's header: jobs named on the command
    /// line take the overrides as defaults instead.
    job_file: String,
}

impl Builder {
    fn item(&mut self, item: &Item, overrides: Overrides<'_>) -> Result<(), JobError> {
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
        spec.option_lines.push((key.to_string(), item.line));
        let record = (name.to_string(), value.unwrap_or("").to_string());
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
            self.warnings.push(format!(
                "{}:{}: {what} in section [{section}] (first at {at}); the value on line {} \
                 is used, as fio does",
                item.file, item.line, item.line
            ));
        }
        self.in_section.push((key, item.file.clone(), item.line));
        match &mut self.target {
            Target::Global => self.global_options.push(record),
            Target::Job(job) => job.options.push(record),
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
                job.option_lines.push((key.to_string(), o.line));
                job.options
                    .push((name.clone(), value.clone().unwrap_or_default()));
            }
        }
        let line = job.line;
        finish(&mut job, &self.jobs).map_err(|(option, message)| JobError {
            file: self.path.clone(),
            line,
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
    if job.time_based && job.runtime.is_none() {
        let message = format!("job '{name}': time_based needs a runtime greater than 0");
        return Err((Some("time_based"), message));
    }
    if job.nrfiles > 1 && job.filename.is_some() {
        let message = format!(
            "job '{name}': nrfiles>1 with an explicit filename is not supported \
             (drop filename and elevator names the files)"
        );
        return Err((Some("nrfiles"), message));
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
