"""`tau-harness play`: a person plays the agent or the customer in the terminal."""
