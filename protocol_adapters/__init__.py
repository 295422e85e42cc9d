"""Protocol adapters: one folder per protocol behind the SourceAdapter / SinkAdapter protocols."""
