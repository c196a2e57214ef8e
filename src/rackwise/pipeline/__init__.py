"""The fleet pipeline: ingest, audit, plan, report, on Spark or in process.

The package has the shape of its stages, each in one place:

``ingest/``
    Every input form (Kafka's JSON files, a Parquet fleet, a metadata export) read and
    validated into the tables of :mod:`.schema`.
``audit/``
    Spread violations, failure-domain exposure, load and skew per cluster, and the summary.
``plan/``
    A target assignment per cluster (:func:`rackwise.balance.plan_cluster`), the moves, the
    target state's figures and the plan's summary.
``report/``
    The self-contained HTML report of the audit and the plan.
``engines/``
    The engines that run those stages: ``spark`` for fleets, ``local`` (in process) for one
    cluster or a small input, chosen by size (:mod:`.engines`); what both write after their
    tables (:mod:`.engines.outputs`).
``generate/``
    A synthetic fleet in both input forms.

Beside them: :mod:`.output` (the ``--out`` directory a run owns) and ``_command`` (the
``pipeline`` command's options and stages). Imports point down that list's reverse: the
command uses the engines, the engines the stages, the stages :mod:`.schema`; a contract in
``pyproject.toml`` keeps it so.
"""
