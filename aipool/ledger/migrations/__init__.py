"""Alembic migrations of the ledger schema (shipped as package files)."""
