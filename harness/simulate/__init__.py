"""The simulator: randomized clients, workers and provider faults, judged whole.

In-process (the default) a run is played as episodes on the scenario runner's virtual
clock, each episode a generated scenario; a violation is shrunk to a scenario file.
With `--processes`, real API and worker processes on PostgreSQL take real HTTP traffic
while workers are killed and restarted (`harness.simulate.processes`).
"""
