"""The fleet store's first schema: blobs, units, sessions, session files, jobs, results, audit.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("blobs", sa.Column("sha256", sa.String(64), primary_key=True), sa.Column("size", sa.Integer, nullable=False), sa.Column("content", sa.LargeBinary, nullable=False))
    op.create_table(
        "units",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("serial", sa.String(200), nullable=False, unique=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("unit_id", sa.Integer, sa.ForeignKey("units.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("problem", sa.String(500), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "session_files",
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), primary_key=True),
        sa.Column("path", sa.String(500), primary_key=True),
        sa.Column("sha256", sa.String(64), sa.ForeignKey("blobs.sha256"), nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("parameters", sa.JSON, nullable=False),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("urdf", sa.Text, nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("session_id"),
    )
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("detail", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    for table in ("audit", "results", "jobs", "session_files", "sessions", "units", "blobs"):
        op.drop_table(table)
