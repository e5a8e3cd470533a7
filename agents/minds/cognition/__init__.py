"""A resident's cognition, one module per job: importance, planning, reacting, conversation,
reflection; `calls` wraps every model call so it joins the run's record stream."""
