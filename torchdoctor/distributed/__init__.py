"""`torchdoctor check --distributed`: every rank of a torchrun / srun / env:// job probes its own
environment, rank 0 gathers the facts over a gloo group, tests the collectives and renders one
report (docs/distributed.md).

- ``launch``: the launcher's variables (RANK, WORLD_SIZE, ..., SLURM_*) -> one Launch;
- ``rank``: what every rank runs (rendezvous, probes, gloo/NCCL tests, watchdog);
- ``job``: rank 0 turns what arrived into JobFacts and a JobReport (rules evaluated per rank
  and over the job);
- ``compare``: the pure helpers behind the rule functions ``differs``/``odd_ones``/``keys_differing``;
- ``bandwidth``: NCCL-tests' algbw/busbw;
- ``model``: JobReport, what the renderers take.

Nothing here is imported by ``torchdoctor check`` unless --distributed is given.
"""
