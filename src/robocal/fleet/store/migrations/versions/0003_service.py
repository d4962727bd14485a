"""The calibration service: stations, hashed access tokens, robot models with criteria; sessions
record their station, model, clock offset and idempotency key (unique per station).

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("station_id", sa.Integer, sa.ForeignKey("stations.id"), nullable=True),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "models",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("urdf", sa.Text, nullable=False),
        sa.Column("criteria", sa.Text, nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("station_id", sa.Integer, nullable=True))
        batch.add_column(sa.Column("model_id", sa.Integer, nullable=True))
        batch.add_column(sa.Column("clock_offset", sa.Float, nullable=True))
        batch.add_column(sa.Column("idempotency_key", sa.String(100), nullable=True))
        batch.create_foreign_key("fk_sessions_station", "stations", ["station_id"], ["id"])
        batch.create_foreign_key("fk_sessions_model", "models", ["model_id"], ["id"])
        batch.create_unique_constraint("uq_sessions_station_key", ["station_id", "idempotency_key"])


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_constraint("uq_sessions_station_key", type_="unique")
        batch.drop_constraint("fk_sessions_model", type_="foreignkey")
        batch.drop_constraint("fk_sessions_station", type_="foreignkey")
        for column in ("idempotency_key", "clock_offset", "model_id", "station_id"):
            batch.drop_column(column)
    for table in ("models", "tokens", "stations"):
        op.drop_table(table)
