class ResumeRefused(RuntimeError):
    pass


class ApprovalRequired(ResumeRefused):
    pass


class PauseExpired(ResumeRefused):
    pass


class BundleMismatch(ResumeRefused):
    pass


class RunRejected(ResumeRefused):
    pass


class StateDiverged(ResumeRefused):
    pass
