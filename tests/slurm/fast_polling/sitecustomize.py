"""The Slurm executor's status checks at most POLL_S seconds apart, for tests/workflow/test_slurm.py only.

tests/workflow/test_slurm.py puts this folder on PYTHONPATH for the Snakemake it runs against the test cluster
(tests/slurm/cluster.sh). snakemake-executor-plugin-slurm waits 10 s longer after every status check that
finds no job finished (up to 180 s), which suits a busy cluster; on the one-node test cluster a job takes
seconds, and that back-off left most of each run waiting for the next check. Only the interval between
status checks changes (each check is one squeue call): submission, partition choice, resources and the
reading of job states are the plugin's own. Every other module imports unchanged.
"""

import importlib.abc
import importlib.util
import sys

POLL_S = 1
PLUGIN = "snakemake_executor_plugin_slurm"


def cap_status_interval(module) -> None:
    executor = module.Executor
    interval = executor.next_seconds_between_status_checks  # the executor interface's property
    executor.next_seconds_between_status_checks = property(lambda self: min(interval.fget(self), POLL_S), interval.fset)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the plugin with the other finders and caps its interval once the module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != PLUGIN:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            run_module = spec.loader.exec_module

            def exec_module(module):
                run_module(module)
                cap_status_interval(module)

            spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PatchOnImport())
