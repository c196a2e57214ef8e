"""Ingestion: every input form read into the pipeline's validated tables.

Three input forms (:mod:`.source`: what an input is, whether it is there, how big) become the
tables of :mod:`rackwise.pipeline.schema`, every row that does not parse or contradicts another
set aside in ``rejected`` with its reason. Two readers give the same rows: :mod:`.spark`
(Spark DataFrames, :class:`.tables.ClusterTables`; its transforms in ``_validate``) and
:mod:`.local` (Arrow tables in this process, validated by ``_local_validate``). What both
share: the JSON files parsed on the driver (:mod:`.json_input`) and the checks that need no
engine (:mod:`.checks`).
"""
