"""The fleet pipeline on Apache Spark: ingest, audit, plan."""
