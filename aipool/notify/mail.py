"""E-mail over SMTP with the standard library."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

from aipool.notify.base import Notification


class EmailNotifier:
    """Sends a plain-text message through an SMTP server (STARTTLS and login when configured)."""

    name = "email"

    def __init__(
        self,
        host: str,
        port: int,
        sender: str,
        recipients: list[str],
        *,
        user: str | None = None,
        password: str | None = None,
        starttls: bool = False,
        timeout: float = 5.0,
    ) -> None:
        self._host, self._port = host, port
        self._sender, self._recipients = sender, recipients
        self._user, self._password = user, password
        self._starttls = starttls
        self._timeout = timeout

    def message(self, n: Notification) -> EmailMessage:
        """The e-mail sent for ``n``."""
        msg = EmailMessage()
        prefix = "[RESOLVED]" if n.status == "resolved" else f"[{n.severity.upper()}]"
        msg["Subject"] = f"{prefix} {n.summary}"
        msg["From"] = self._sender
        msg["To"] = ", ".join(self._recipients)
        parts = [n.summary]
        if n.description:
            parts.append(n.description)
        if n.body:
            parts.append(n.body)
        if n.labels:
            parts.append("\n".join(f"{k}: {v}" for k, v in sorted(n.labels.items())))
        msg.set_content("\n\n".join(parts) + "\n")
        return msg

    def send(self, notification: Notification) -> None:
        """Deliver through SMTP; raise on any SMTP or socket error."""
        with smtplib.SMTP(self._host, self._port, timeout=self._timeout) as smtp:
            if self._starttls:
                smtp.starttls()
            if self._user and self._password:
                smtp.login(self._user, self._password)
            smtp.send_message(self.message(notification))
