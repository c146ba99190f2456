"""What an operator watches: the deployment's metrics, counted in its database."""
