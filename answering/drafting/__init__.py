"""Reply drafting, stages 2 to 8: one incoming email becomes one draft with a computed verdict.

One module per stage (docs/operations/drafting.md): classify, condense, gather, rerank,
fit, generate, assess; `pipeline.compose_draft` runs them in order and stores nothing.
Three of them call a model (classify and condense the utility model, generate the drafting
model; rerank the utility model too when it is switched on); fit and assess are
arithmetic and text checks. Logs, spans and metrics carry counts and the endpoint alias
only, never mail, a query or draft text.
"""
