"""AWS MSK IAM for librdkafka: OAUTHBEARER tokens signed locally by `aws-msk-iam-sasl-signer-python`.

The signer presigns a `kafka-cluster:Connect` request with the AWS credentials chain (environment, profile,
instance role), or a named profile, or a role it assumes; librdkafka calls `oauth_cb` for a token before
it expires. The token is never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mirror_engine.security.model import MskIamLogin


def sign_token(login: MskIamLogin) -> tuple[str, float]:
    """A fresh token and its expiry (seconds since the epoch), for `login`'s region and credentials."""
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    except ImportError:
        raise RuntimeError("AWS_MSK_IAM needs the package aws-msk-iam-sasl-signer-python "
                           "(pip install aws-msk-iam-sasl-signer-python)") from None
    if login.role_arn:
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(login.region, login.role_arn)
    elif login.profile:
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(login.region, login.profile)
    else:
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(login.region)
    return token, expiry_ms / 1000.0


def token_callback(login: MskIamLogin) -> Callable[[str], tuple[str, float]]:
    """librdkafka's `oauth_cb`: called with `sasl.oauthbearer.config`, answers (token, expiry in seconds)."""

    def oauth_cb(_config: str) -> tuple[str, float]:
        return sign_token(login)

    return oauth_cb
