"""Human-AI encounters: scenarios, the roles that play them, judges, batch evaluation.

An encounter is one episode in which a simulated (or resident) human talks with an AI
assistant that has tools; tools are played by an emulator or backed by town state, and
judges score the episode on HAICOSYSTEM's dimensions and ToolEmu's scales.
"""
