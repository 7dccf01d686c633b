"""Analysis: aggregation, rankings and swap distances, the evidence tables, paired checks,
claims, figures, publication formats, review of per-example files, timings and manifests."""
