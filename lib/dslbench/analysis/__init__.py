"""Statistics of a DSL-Bench run: the paper's Sections IV-V on any run directory.

Modules (each usable on its own; the notebooks 04 and 05 call them in order):

  cells      verdict table -> DSL x model cells (macro pass rates, evaluated counts, exclusions)
  anova      balanced two-way additive ANOVA (eta-squared) with bootstrap CIs and sensitivity reruns
  mixed      binomial mixed model with crossed random intercepts (lme4 via rpy2; fallbacks labelled)
  ranking    Kendall's W over per-DSL model rankings (tie-corrected) with a permutation p-value
  meta       task and toolchain metadata read loosely (failure_modes tags, cards, oracle flags)
  profiles   capability profiles along bottleneck axes with bootstrap CIs and ties
  factors    DSL factors (KD, SF, HC, RY) from our own corpora; correlations (Table III)
  profiler   DSL-Profiler: nearest benchmark DSLs, risk ranges, bottleneck, intervention, LOO MAE; CLI
  published  the paper's figures as data, set beside ours
  simulate   estimator check: planted variance components recovered by ANOVA and the mixed model
  plots      the figures
"""
