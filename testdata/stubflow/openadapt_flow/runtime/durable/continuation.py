from openadapt_flow.runtime.durable.approval import StateDiverged


class ContinuationBusy(StateDiverged):
    pass
