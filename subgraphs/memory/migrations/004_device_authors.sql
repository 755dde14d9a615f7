-- A device (or its sidecar) may change only the memory records it wrote (issue 17: a device's token acts as the
-- device, not as the member who approved it). The device that last wrote a record; null when a person did.
-- Covered by the table-wide INSERT/UPDATE grant memory's role holds.
ALTER TABLE memory.records ADD COLUMN author_device uuid;
