//! Schedulers from outside elevator: a [`PluginScheduler`] is any
//! [`Scheduler`] a front end builds (the Python bindings wrap a Python class
//! in one), a [`Plugin`] is a named factory of them, and [`Plugins`] the set a
//! run may choose from by name, beside the built-in schedulers.
//!
//! The core stays pure: a plugin is a value the caller hands in with the run,
//! never a global registry. A plugin runs behind the same protocol as the
//! built-ins (see [`Scheduler`]), through one dynamic call per operation; the
//! built-ins keep their static dispatch ([`super::AnyScheduler`]).
//!
//! A plugin finds merges the elevator way ([`super::MergeLookup::Elevator`]:
//! the queue's one-hit cache and back-merge hash, then its own
//! `front_merge_candidate`): its `merge_lookup`, `newest` and `older` are
//! not asked, which keeps the queue's scan of recent requests, its hottest
//! loop under `none`, free of dynamic calls.
//!
//! A plugin cannot fail through the [`Scheduler`] methods, which are
//! infallible: one that fails (a Python exception) keeps the protocol (it
//! hands out what it holds, so the run can end) and says so through
//! [`PluginScheduler::failure`], which the engine asks after the run.

use std::fmt;

use super::Scheduler;

/// A scheduler built outside elevator, chosen by name through [`Plugins`].
pub trait PluginScheduler: Scheduler + Send + fmt::Debug {
    /// A copy of it, for a queue that is cloned.
    fn clone_box(&self) -> Box<dyn PluginScheduler>;

    /// Why it failed, once it has: the run that used it fails with this.
    fn failure(&self) -> Option<String> {
        None
    }
}

impl Clone for Box<dyn PluginScheduler> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// What a [`Plugin`] builds its schedulers with: a function, copied with
/// the plugin (a closure over shared data: the caller's `Arc`, say).
pub trait MakeScheduler: Send + Sync {
    /// A new scheduler.
    fn make(&self) -> Box<dyn PluginScheduler>;

    /// A copy of this function.
    fn clone_make(&self) -> Box<dyn MakeScheduler>;
}

impl<F> MakeScheduler for F
where
    F: Fn() -> Box<dyn PluginScheduler> + Clone + Send + Sync + 'static,
{
    fn make(&self) -> Box<dyn PluginScheduler> {
        self()
    }

    fn clone_make(&self) -> Box<dyn MakeScheduler> {
        Box::new(self.clone())
    }
}

/// A named factory of a [`PluginScheduler`]: each run builds its own.
pub struct Plugin {
    name: String,
    make: Box<dyn MakeScheduler>,
}

impl Clone for Plugin {
    fn clone(&self) -> Plugin {
        Plugin {
            name: self.name.clone(),
            make: self.make.clone_make(),
        }
    }
}

impl Plugin {
    /// The plugin `name`, built by `make`.
    pub fn new(name: impl Into<String>, make: impl MakeScheduler + 'static) -> Plugin {
        Plugin {
            name: name.into(),
            make: Box::new(make),
        }
    }

    /// The name a run chooses it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new scheduler of this plugin.
    pub fn build(&self) -> Box<dyn PluginScheduler> {
        self.make.make()
    }
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin").field("name", &self.name).finish()
    }
}

impl PartialEq for Plugin {
    /// Plugins are equal when their names are: a run chooses by name.
    fn eq(&self, other: &Plugin) -> bool {
        self.name == other.name
    }
}

/// The plugins a run may choose from by name, besides the built-ins.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plugins(Vec<Plugin>);

impl Plugins {
    /// Add `plugin`; one already there under its name is replaced.
    pub fn add(&mut self, plugin: Plugin) {
        match self.0.iter_mut().find(|p| p.name == plugin.name) {
            Some(old) => *old = plugin,
            None => self.0.push(plugin),
        }
    }

    /// The plugin named `name`.
    pub fn find(&self, name: &str) -> Option<&Plugin> {
        self.0.iter().find(|p| p.name == name)
    }

    /// Their names, in the order they were added.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|p| p.name.as_str()).collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
