TUTORIAL_WORKFLOW_NAME = "synthetic-tutorial"
