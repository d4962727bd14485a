"""Leases on running jobs: the runner that claimed a job (owner) and until when it holds it
(lease_until, renewed by the runner's heartbeat), so several runners share one store and only the
jobs of a dead runner go back to the queue; an index on the job status the claims select by.
Jobs left running before this revision have no lease: they count as expired.

Revision ID: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("owner", sa.String(100), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
        batch.create_index("ix_jobs_status", ["status"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_status")
        batch.drop_column("lease_until")
        batch.drop_column("owner")
