"""One module per paper concept; each builds a declarative model and solves it into a Result."""
