"""The reference's model-facing texts (`tau2/reference_texts/`): generated from the pinned release
by running its own code in a throwaway virtualenv (`build`) with our dump script (`dump`)."""
