"""The experiment framework every binary shares: comparisons of scenarios
(`comparison`, `scenarios`, `records`), their tables, plots and Markdown
results sections (`tables`, `plots`, `results`), and the binaries' entry point
(`cli`). What is specific to one task stays with its binary in `experiments/`.
"""
